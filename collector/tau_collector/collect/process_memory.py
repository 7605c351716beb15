"""What keeps a collector process's resident memory bounded, whatever the backlog: its allocators.

A sidecar shares its machine with a training job (DESIGN §3), and a backlog is read as thousands of
bounded batches, each a few megabytes of lines, base64 and Arrow buffers that are freed again. Freed
memory must go back to the system, not stay resident and grow with the number of batches:

* pyarrow's default mimalloc pool keeps freed pages; the system allocator gives them back. It is
  chosen before pyarrow is imported: set afterwards, pyarrow's own internal allocations stay in
  mimalloc (28 MB resident at 10 chunks/s).
* glibc raises its mmap threshold to the largest block freed so far (up to 32 MB), after which a
  batch's multi-megabyte buffers come from the heap, which fragments and is rarely trimmed; resident
  memory then rises slowly with every batch (221 MB after 5 minutes of a 1 GB backlog, 263 MB at its
  end). A fixed threshold keeps large blocks in their own mappings, returned as soon as freed.
* pyarrow imports pandas, when it is installed, the first time it builds an array -- only to ask
  whether its input is a pandas object, which ours never is (~35 MB resident with pandas 3.1).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import sys
from collections.abc import Iterator

__all__ = ["MMAP_THRESHOLD", "bound_process_memory", "pandas_kept_out", "release_arrow_memory"]

MMAP_THRESHOLD = 128 * 1024  # glibc's initial default, kept fixed
_M_MMAP_THRESHOLD = -3  # <malloc.h>


def bound_process_memory() -> None:
    """Call first thing in a command that reads a backlog (before pyarrow is imported)."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    if "pyarrow" in sys.modules:
        import pyarrow

        pyarrow.set_memory_pool(pyarrow.system_memory_pool())
    if sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc":
        try:
            ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        except (OSError, AttributeError):  # a libc without mallopt: its own policy stands
            pass


def release_arrow_memory() -> None:
    """Hand memory Arrow freed back to the system now (after a large, rare allocation such as a merge); nothing
    when this process never loaded pyarrow (a merge without it: :mod:`..expstore.format.parquet_reader`)."""
    pyarrow = sys.modules.get("pyarrow")
    if pyarrow is None:
        return
    pyarrow.default_memory_pool().release_unused()


class _NoPandas:
    """An import finder that refuses pandas (see the module's docstring)."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] == "pandas":
            raise ModuleNotFoundError(f"{name} is not used by the collector", name=name)


@contextlib.contextmanager
def pandas_kept_out() -> Iterator[None]:
    """While the collector runs, ``import pandas`` fails (unless something loaded pandas already); afterwards
    it works again, so that ``run()`` called in-process leaves its caller's imports as they were."""
    finder = None
    if "pandas" not in sys.modules and not any(isinstance(f, _NoPandas) for f in sys.meta_path):
        finder = _NoPandas()
        sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        if finder is not None:
            sys.meta_path.remove(finder)
