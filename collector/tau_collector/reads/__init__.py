"""The read contract: what every reader of experiments answers, in the Portal's words rather than a store's.

- :mod:`.blocking`: the non-blocking rule (:class:`WouldBlock`, :func:`may_block`, :func:`no_blocking`).

Nothing here loads pyarrow or numpy, and nothing here imports the expstore: the store is one
implementation of this contract, not its home.
"""

from __future__ import annotations

from .blocking import QUICK_FILE_ROWS, QUICK_POINTS, WouldBlock, may_block, no_blocking

__all__ = ["QUICK_FILE_ROWS", "QUICK_POINTS", "WouldBlock", "may_block", "no_blocking"]
