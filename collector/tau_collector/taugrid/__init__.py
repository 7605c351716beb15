"""TauGrid-compatible bytes and rules: Go's JSON encoding, TauGrid's ids, run configurations, their YAML and
their limits.
"""
