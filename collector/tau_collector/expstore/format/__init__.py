"""The store's on-disk formats: the index schema and layout, metric files and their Parquet encoding, series levels.

Nothing here imports the other layers (:mod:`..write`, :mod:`..maintain`, :mod:`..read`); the modules are
imported by name, so that opening a store loads no numpy or pyarrow.
"""
