"""taunotebook: live training-metric panes for Jupyter on top of tau-collector."""

__version__ = "0.1.0"
