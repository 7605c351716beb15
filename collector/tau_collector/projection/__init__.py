"""Projection: history rows and event-file scalars into TauGrid's canonical MetricEvents (the model, cards, the
projector, its column form and its plain reference).
"""
