"""The local Portal: TauGrid's v2 Stellar API and Stellar pages over a local expstore."""
