"""Writing a store: metric files and their index rows, summaries, run listings, run configurations, run events.

The index rows these modules write are read back through them too (their SQL lives here), so
:mod:`..read` asks them instead of spelling the tables out.
"""
