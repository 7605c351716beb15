"""A job's checkpoints, found by glob and registered as ``checkpoint`` artifacts of its run with their step.

The rule for the step (:func:`step_of`): the number that ends the checkpoint's name, its extension
aside — ``ckpt-1000.pt``, ``step_1000/``, ``checkpoint-1000``, ``epoch=3-step=1000.ckpt`` are step 1000.
A file whose own name ends in no number takes its parent directory's when that names a step
(``step_1000/model.pt``, ``checkpoint-1000/``, ``ckpt_1000``, ``iter1000``, ``global_step1000``). A name with
no step (``last.pt``) is registered with no step (NULL), and the collector says so once.

A checkpoint is registered once it is stable: the same size and modification time (a directory: the
same listing of names, sizes and times) on two consecutive scans, and unmodified for ``settle`` seconds.
A file still being written is therefore left for a later scan; after the job ended (the final scan)
everything found is registered. Names that by convention are still being written — starting with ``.``
or ending in ``.tmp``, ``.partial``, ``.incomplete`` — are never registered.

A restarted collector reads the rows it registered back (``known``) and hashes again only the checkpoints
whose signature (a file's size and modification time, kept in the row's ``signature`` tag) changed since.

The row's ``uri`` is the checkpoint's absolute path (checkpoints are registered by their place, never
copied into the store), ``size_bytes`` its size (a directory: the sum of its files), ``digest`` the
SHA-256 of the file read in blocks, or for a directory of its manifest: one line ``<sha256> <size>
<relative path>`` per file, in name order, hashed as it is produced (at most :data:`MAX_MANIFEST_FILES`
files; a larger directory is not registered and is reported). A registered checkpoint that disappears
(a job keeping its last few) is registered again with the tag ``deleted``, so its place in the history
stays and readers know it cannot be loaded.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tau_collector.reads.rows import ArtifactRow

__all__ = ["CHECKPOINT_TYPE", "MAX_MANIFEST_FILES", "CheckpointFound", "CheckpointScanner", "find_checkpoints",
           "latest_checkpoint", "step_of"]

CHECKPOINT_TYPE = "checkpoint"
MAX_MANIFEST_FILES = 100_000
_BLOCK = 1 << 20
_STEP = re.compile(r"(\d+)$")
_STEP_DIR = re.compile(r"(?:^|[-_.=])(?:global_step|step|steps|ckpt|checkpoint|iter|iteration)[-_=]?(\d+)$",
                       re.IGNORECASE)
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]*$")  # .pt, .ckpt, .safetensors, .gz (never .1000)
_IN_PROGRESS = (".tmp", ".partial", ".incomplete")


def step_of(path: str) -> int | None:
    """The step a checkpoint's name carries (see the module's rule), or None."""
    name = os.path.basename(os.path.normpath(path))
    step = _trailing_number(name)
    if step is None and not os.path.isdir(path):
        match = _STEP_DIR.search(os.path.basename(os.path.dirname(os.path.normpath(path))))
        step = int(match.group(1)) if match else None
    return step


def _trailing_number(name: str) -> int | None:
    stem = name
    while True:
        stripped = _EXTENSION.sub("", stem)
        if stripped == stem or not stripped:
            break
        stem = stripped
    match = _STEP.search(stem)
    return int(match.group(1)) if match else None


def _in_progress(path: str) -> bool:
    name = os.path.basename(os.path.normpath(path))
    return name.startswith(".") or name.lower().endswith(_IN_PROGRESS)


@dataclass(frozen=True)
class CheckpointFound:
    """A checkpoint on disk: its absolute path, step (or None), whether it is a directory, its signature."""

    path: str
    step: int | None
    is_dir: bool
    signature: str  # changes whenever the checkpoint does (size and times of it, or of its files)
    mtime: float


def _walk(root: str) -> Iterable[tuple[str, os.stat_result]]:
    """Every regular file under ``root`` as (relative path, stat), in name order; symlinks are not followed."""
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            entries = sorted(os.scandir(os.path.join(root, rel)), key=lambda e: e.name, reverse=True)
        except OSError:
            continue
        files, dirs = [], []
        for entry in entries:
            child = os.path.join(rel, entry.name) if rel else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    dirs.append(child)
                elif entry.is_file(follow_symlinks=False):
                    files.append((child, entry.stat(follow_symlinks=False)))
            except OSError:
                continue
        yield from reversed(files)
        stack.extend(dirs)  # reversed names: popped in name order


def _describe(path: str) -> CheckpointFound | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    if os.path.isdir(path):
        sig = hashlib.sha256()
        newest = st.st_mtime
        count = 0
        for rel, fst in _walk(path):
            count += 1
            if count > MAX_MANIFEST_FILES:
                break
            sig.update(f"{rel}\0{fst.st_size}\0{fst.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
            newest = max(newest, fst.st_mtime)
        return CheckpointFound(path, step_of(path), True, f"{count}:{sig.hexdigest()}", newest)
    return CheckpointFound(path, step_of(path), False, f"{st.st_size}:{st.st_mtime_ns}", st.st_mtime)


def find_checkpoints(patterns: Iterable[str]) -> list[CheckpointFound]:
    """What the globs match now (absolute, deduplicated, names being written left out), by (step, path)."""
    paths: set[str] = set()
    for pattern in patterns:
        for match in glob.glob(os.path.expanduser(pattern)):
            if not _in_progress(match):
                paths.add(os.path.abspath(match))
    found = [f for f in (_describe(p) for p in sorted(paths)) if f is not None]
    return sorted(found, key=lambda f: (f.step is None, f.step or 0, f.path))


def latest_checkpoint(patterns: Iterable[str]) -> CheckpointFound | None:
    """The checkpoint to resume from: the highest step among those found; with no step anywhere, the newest."""
    found = find_checkpoints(patterns)
    stepped = [f for f in found if f.step is not None]
    if stepped:
        return max(stepped, key=lambda f: (f.step, f.mtime))
    return max(found, key=lambda f: f.mtime) if found else None


def file_digest(path: str) -> tuple[str, int]:
    """``("sha256:<hex>", size)`` of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while block := fh.read(_BLOCK):
            h.update(block)
            size += len(block)
    return "sha256:" + h.hexdigest(), size


def directory_digest(path: str) -> tuple[str, int]:
    """``("sha256:<hex>", total size)`` of a directory's manifest (see the module); ValueError when too large."""
    manifest = hashlib.sha256()
    total = 0
    for count, (rel, _) in enumerate(_walk(path), start=1):
        if count > MAX_MANIFEST_FILES:
            raise ValueError(f"checkpoint directory {path} holds more than {MAX_MANIFEST_FILES} files")
        digest, size = file_digest(os.path.join(path, rel))
        total += size
        manifest.update(f"{digest[len('sha256:'):]} {size} {rel}\n".encode("utf-8", "surrogateescape"))
    return "sha256:" + manifest.hexdigest(), total


@dataclass
class CheckpointScanner:
    """Registers the checkpoints ``patterns`` match for ``run_id`` through ``register`` as they become stable.

    Call :meth:`scan` on every pass of the collector and ``scan(final=True)`` once the job ended.
    """

    run_id: str
    patterns: list[str]
    register: Callable[[list[ArtifactRow]], None]
    log: Callable[[str], None] = lambda message: None
    settle: float = 2.0  # seconds a checkpoint must be unmodified before it is registered (not on the final scan)
    clock: Callable[[], float] = time.time
    _seen: dict[str, str] = field(default_factory=dict)  # path -> signature on the previous scan
    _registered: dict[str, tuple[str, ArtifactRow]] = field(default_factory=dict)  # path -> (signature, row)
    _told: set[str] = field(default_factory=set)  # paths already reported (no step, too large, unreadable)
    known: Callable[[], list[ArtifactRow]] | None = None  # the rows already registered (read once, on the first scan)

    @property
    def last(self) -> ArtifactRow | None:
        """The latest registered checkpoint still on disk: highest step, else the last registered without one."""
        live = [row for _, row in self._registered.values() if not (row.tags or {}).get("deleted")]
        stepped = [r for r in live if r.step is not None]
        if stepped:
            return max(stepped, key=lambda r: (r.step, r.created_at or ""))
        return live[-1] if live else None

    def scan(self, *, final: bool = False) -> list[ArtifactRow]:
        """Register what became stable (everything found, when ``final``); returns the rows written."""
        if self.known is not None:
            self._remember(self.known())
            self.known = None
        found = find_checkpoints(self.patterns)
        now = self.clock()
        rows: list[ArtifactRow] = []
        registered: dict[str, tuple[str, ArtifactRow]] = {}  # applied once ``register`` took the rows
        present = set()
        for item in found:
            present.add(item.path)
            previous = self._seen.get(item.path)
            self._seen[item.path] = item.signature
            done = self._registered.get(item.path)
            if done is not None and done[0] == item.signature:
                continue
            stable = final or (previous == item.signature and now - item.mtime >= self.settle)
            if not stable:
                continue
            row = self._row(item)
            if row is not None:
                rows.append(row)
                registered[item.path] = (item.signature, row)
        for path in [p for p in self._registered if p not in present]:
            signature, row = self._registered[path]
            if (row.tags or {}).get("deleted"):
                continue
            gone = ArtifactRow(row.run_id, row.type, row.uri, row.name, step=row.step, digest=row.digest,
                               size_bytes=row.size_bytes, created_at=row.created_at,
                               tags={**(row.tags or {}), "deleted": True})
            registered[path] = (signature, gone)
            rows.append(gone)
        for path in [p for p in self._seen if p not in present]:
            del self._seen[path]
        if rows:
            self.register(rows)  # raises when the store cannot take them: the next scan tries again
        for path, (signature, row) in registered.items():
            if (row.tags or {}).get("deleted"):
                self.log(f"checkpoint {path} was deleted; it stays listed (tagged deleted) at step {row.step}")
            self._registered[path] = (signature, row)
        return rows

    def _remember(self, rows: list[ArtifactRow]) -> None:
        """Take rows registered before (by an earlier collector of the run) as registered: a checkpoint whose
        signature is unchanged is not hashed again. Deleted ones are left out (a file back in their place is new)."""
        for row in rows:
            tags = row.tags or {}
            if row.run_id == self.run_id and isinstance(tags.get("signature"), str) and not tags.get("deleted"):
                self._registered.setdefault(row.uri, (tags["signature"], row))

    def _row(self, item: CheckpointFound) -> ArtifactRow | None:
        try:
            digest, size = directory_digest(item.path) if item.is_dir else file_digest(item.path)
        except FileNotFoundError:
            return None  # deleted while being read: nothing to register
        except (OSError, ValueError) as exc:
            if item.path not in self._told:
                self._told.add(item.path)
                self.log(f"checkpoint {item.path} not registered: {getattr(exc, 'strerror', None) or exc}")
            return None
        if item.step is None and item.path not in self._told:
            self._told.add(item.path)
            self.log(f"checkpoint {item.path}: its name carries no step (e.g. ckpt-1000.pt, step_1000/); "
                     "registered without one")
        return ArtifactRow(self.run_id, CHECKPOINT_TYPE, item.path, item.path, step=item.step, digest=digest,
                           size_bytes=size, created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           tags={"kind": "directory" if item.is_dir else "file", "signature": item.signature})
