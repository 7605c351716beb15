"""The local Portal's answer shapes: one module per shape, each with its encoder and its OpenAPI fragment.

A shape sent by several routes is encoded by its module only (the metric-catalog entry by the v2 catalog
and the tails, the run by the run detail and the run listing, ...); the client's models
(:mod:`taunotebook.client`) decode them, and ``tests/portal/test_wire_models.py`` checks the two agree.
:mod:`.schemas` gathers the fragments for the OpenAPI document. Submodules are imported by name (this
package imports none of them, so the view modules and :mod:`..errors` can import any without a cycle).
"""
