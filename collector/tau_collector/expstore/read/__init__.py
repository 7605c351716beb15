"""Reading a store: :class:`~.reader.StoreReader`, its file slices and caches, level reads, merge, M4 and export."""
