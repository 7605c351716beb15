"""Opening and creating an expstore directory, and the SQLite discipline every reader and writer shares.

Several collector processes and a Portal use one store at once. The rules that make that safe:
``index.sqlite`` runs in WAL mode (readers never block the writer) with a generous busy timeout,
write transactions are short and start with ``BEGIN IMMEDIATE`` (no lock upgrades, so no
"database is locked" deadlock), and data files are immutable: written under a temporary name,
fsynced, renamed, and only then registered in the index. A file is visible once registered.

A store is opened for reading (the default: the Portal, ``tau-collector store``, :class:`StoreReader`)
or for writing (``create=True`` or ``writable=True``: the expstore sink, imports). A reader never
writes: no schema migration, no journal-mode switch, SQLite opened with ``mode=ro``. On a medium
it cannot write at all -- a read-only mount, a directory of another user -- SQLite cannot create
the ``-wal``/``-shm`` files a WAL reader needs, and the index is then opened ``immutable=1``
(https://www.sqlite.org/wal.html#readonly): a snapshot, which is what such a store is. A writer
checks first that it can write the store and otherwise fails with :class:`StoreReadOnlyError`
before writing anything.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import os
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson

from tau_collector.expstore.format import schema
from tau_collector.expstore.write.index_orphans import ensure_no_orphaned_file_rows
from tau_collector.expstore.write.listing import ensure_listings, ensure_note_search
from tau_collector.spool.durable import (
    SYNCFS_FROM,
    FilesystemSync,
    fsync_directories,
    fsync_directory,
    make_dirs,
    make_dirs_many,
    write_files,
    write_files_synced,
)

__all__ = ["ExpStore", "StoreError", "StoreNotFoundError", "StoreReadOnlyError", "open_store", "utc_now_rfc3339"]

BUSY_TIMEOUT_MS = 60_000
SQLITE_MAX_PATHNAME = 512  # the unix VFS's MAX_PATHNAME: a longer index path cannot be opened


class StoreError(Exception):
    """The store cannot be opened or is not an expstore."""


class StoreNotFoundError(StoreError):
    """No store at the given directory (and creation was not asked for)."""


class StoreReadOnlyError(StoreError):
    """A writer was asked for, and this process cannot write the store; nothing was written."""

    def __init__(self, root: Path, reason: str) -> None:
        super().__init__(f"expstore {root} is read-only ({reason}); nothing was written to it")
        self.root = root
        self.reason = reason


# errnos meaning "this process may not write here", as opposed to a full disk or an I/O error.
READ_ONLY_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
_NO_WAL_FILES = frozenset({"SQLITE_CANTOPEN", "SQLITE_READONLY_DIRECTORY", "SQLITE_READONLY_CANTINIT"})


def unwritable_reason(paths: list[Path]) -> str | None:
    """Why this process cannot write the existing ``paths`` (a read-only mount, no permission), else None."""
    for path in paths:
        try:
            if os.statvfs(path).f_flag & os.ST_RDONLY:
                return f"{path} is on a read-only filesystem"
        except FileNotFoundError:
            continue
        if not os.access(path, os.W_OK):
            return f"no write permission on {path} for uid {os.geteuid()}"
    return None


def utc_now_rfc3339() -> str:
    # TauGrid stamps rows with time.RFC3339 (second precision, UTC).
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def open_store(root: str | os.PathLike[str], *, create: bool = False, writable: bool | None = None) -> ExpStore:
    """Open the store at ``root``: for reading, or for writing with ``create`` (making the layout when it
    is missing) or ``writable``."""
    return ExpStore(root, create=create, writable=writable)


class ExpStore:
    """One store directory. Cheap to construct; one SQLite connection per thread.

    ``writable`` defaults to ``create``: ``ExpStore(root)`` reads, ``ExpStore(root, create=True)`` writes;
    ``ExpStore(root, create=True, writable=False)`` creates a missing store and reads an existing one.
    """

    def __init__(self, root: str | os.PathLike[str], *, create: bool = False, writable: bool | None = None) -> None:
        self.root = Path(root).absolute()
        self.writable = create if writable is None else writable
        self.immutable = False  # set when a reader had to open the index as an immutable snapshot
        # A publication of many files may sync their whole filesystem at once (see publish_files): only a writer
        # that owns the machine's disk for the moment (`taunotebook import`) says so. A sidecar never does: a
        # filesystem-wide sync would also flush what the training job is writing (checkpoints) and stall on it.
        self.whole_filesystem_syncs = False
        manifest_path = self.root / schema.MANIFEST_FILE
        created = False
        if not manifest_path.exists():
            if not create:
                raise StoreNotFoundError(
                    f"no expstore at {self.root}: {schema.MANIFEST_FILE} is missing "
                    "(create one by running a collector with the expstore sink)"
                )
            self._create_layout()
            created = True
        self.manifest = self._read_manifest(manifest_path)
        self.index_path = self.root / self.manifest.get("index", schema.INDEX_FILE)
        self.metrics_dir = self.root / self.manifest.get("metrics_dir", schema.METRICS_DIR)
        self._local = threading.local()
        if self.writable:
            reason = unwritable_reason([self.root, self.index_path, self.metrics_dir])
            if reason is not None:
                raise StoreReadOnlyError(self.root, reason)
            if not created:
                self._migrate()
        elif not self.index_path.exists():
            raise StoreError(f"{self.index_path} is missing: the store is incomplete (being created, or damaged); "
                             "a collector or import writing to it creates the index")

    # -- layout ---------------------------------------------------------------------------

    def _create_layout(self) -> None:
        try:
            make_dirs(self.root)  # its name durable too: the index acknowledges chunks
        except OSError as exc:
            if exc.errno in READ_ONLY_ERRNOS:
                raise StoreReadOnlyError(self.root, f"cannot create it: {exc.strerror}") from None
            raise
        reason = unwritable_reason([self.root])
        if reason is not None:
            raise StoreReadOnlyError(self.root, reason)
        # The index gets its tables before the manifest appears: a reader that finds a manifest
        # always finds a complete index (readers never migrate).
        self.index_path = self.root / schema.INDEX_FILE
        self._local = threading.local()
        writable, self.writable = self.writable, True  # creating writes, whatever the store is opened for
        try:
            self._migrate()
        finally:
            self.close()
            self.writable = writable
        for name in (schema.METRICS_DIR, schema.APPEND_LOG_DIR, schema.ARTIFACTS_DIR):
            (self.root / name).mkdir(exist_ok=True)
        manifest = schema.new_manifest(utc_now_rfc3339())
        data = orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n"
        # Two processes may create the store at once: each writes its own temp file and links it
        # in without replacing, so the first manifest wins and nobody sees a half-written one.
        tmp = self.root / f".{schema.MANIFEST_FILE}.tmp-{uuid.uuid4().hex}"
        try:
            _write_fsynced(tmp, data)
        except BaseException:
            tmp.unlink(missing_ok=True)  # a full disk leaves no temporary manifest behind
            raise
        try:
            os.link(tmp, self.root / schema.MANIFEST_FILE)
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
        fsync_directory(self.root)

    def _read_manifest(self, path: Path) -> dict[str, str]:
        try:
            manifest = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise StoreError(f"{path}: unreadable manifest: {exc}") from None
        if not isinstance(manifest, dict) or manifest.get("kind") != schema.STORE_KIND:
            raise StoreError(f"{path}: not an expstore manifest (kind must be {schema.STORE_KIND!r})")
        if manifest.get("schema_version") != schema.SCHEMA_VERSION:
            raise StoreError(
                f"{path}: schema_version {manifest.get('schema_version')!r} is not {schema.SCHEMA_VERSION!r}"
            )
        return manifest

    def _migrate(self) -> None:
        try:
            conn = self.connection()
            with self.write_transaction() as tx:
                tx.executescript_in_tx(schema.SCHEMA_SQL + schema.INDEX_SQL + schema.EXTENSION_SQL)
                conn.executemany(
                    "INSERT OR REPLACE INTO schema_meta(key, value) VALUES (?, ?)", schema.schema_meta_rows()
                )
                ensure_listings(tx)  # a store from before the run listings gets them once, here
                ensure_note_search(tx)  # and its notes' search index
                ensure_no_orphaned_file_rows(tx)  # and loses the file rows an older compaction left behind
        except sqlite3.OperationalError as exc:
            self.close()
            # e.g. a -wal file of another user beside a writable index: SQLite says "readonly database"
            if getattr(exc, "sqlite_errorname", "").startswith("SQLITE_READONLY"):
                raise StoreReadOnlyError(self.root, f"{self.index_path}: {exc}") from None
            if getattr(exc, "sqlite_errorname", "").startswith("SQLITE_CANTOPEN"):
                raise StoreError(self._cannot_open(exc)) from None
            raise

    # -- connections and transactions ------------------------------------------------------

    def connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid != os.getpid():
            # A forked child must not use its parent's SQLite handle (SQLite forbids it); leave the
            # parent's handle alone and open our own.
            conn = None
        if conn is None:
            conn = self._connect_for_writing() if self.writable else self._connect_for_reading()
            self._local.conn = conn
            self._local.pid = os.getpid()
        return conn

    def _connect_for_writing(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.index_path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # WAL is persistent in the file; setting it on every open is cheap and covers a store
        # created by a tool that left the default rollback journal.
        conn.execute("PRAGMA journal_mode = WAL")
        # FULL, not NORMAL: in WAL mode NORMAL syncs only at checkpoints, so a COMMIT can return -- and
        # the collector acknowledge the chunk it records, deleting its spooled copy -- before the commit
        # is on disk; a power loss would then lose the chunk from both. FULL syncs the WAL at every
        # COMMIT (one fsync per chunk; docs/data-path.md "Durability", bench/bench_durability.py).
        conn.execute("PRAGMA synchronous = FULL")
        return conn

    def _cannot_open(self, exc: sqlite3.Error) -> str:
        size = len(os.fsencode(self.index_path))
        if size > SQLITE_MAX_PATHNAME:
            return (f"{self.index_path}: {exc}: SQLite opens no path longer than {SQLITE_MAX_PATHNAME} bytes "
                    f"(this one is {size}); use a store directory with a shorter path")
        return f"{self.index_path}: {exc}"

    def reading_connection(self) -> sqlite3.Connection:
        """A new connection of the caller's own that only reads (read-only or immutable, as the store allows)."""
        return self._connect_for_reading()

    def _connect_for_reading(self) -> sqlite3.Connection:
        uri = self.index_path.as_uri()
        if not self.immutable:
            conn = self._connect_uri(uri + "?mode=ro")
            try:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return conn
            except sqlite3.OperationalError as exc:
                conn.close()
                # A WAL index whose -wal/-shm files do not exist and cannot be created here: SQLite says
                # CANTOPEN on a read-only mount, READONLY_DIRECTORY in a directory of another user.
                if getattr(exc, "sqlite_errorname", "") not in _NO_WAL_FILES:
                    raise
            self.immutable = True
        conn = self._connect_uri(uri + "?immutable=1")
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError as exc:
            conn.close()
            raise StoreError(self._cannot_open(exc)) from None
        return conn

    @staticmethod
    def _connect_uri(uri: str) -> sqlite3.Connection:
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return conn

    def _require_writable(self) -> None:
        if not self.writable:
            raise StoreError(f"expstore {self.root} was opened for reading; open it with writable=True to write")

    @contextlib.contextmanager
    def write_transaction(self) -> Iterator[_Tx]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``: takes the write lock up front so it never has to upgrade."""
        self._require_writable()
        conn = self.connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield _Tx(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @contextlib.contextmanager
    def read_transaction(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot across several SELECTs (WAL readers never wait for writers)."""
        conn = self.connection()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- immutable files ------------------------------------------------------------------

    def absolute(self, relative_path: str) -> Path:
        return self.root / relative_path

    def publish_file(self, relative_path: str, write: Callable[[Path], None]) -> Path:
        """Write an immutable file: ``write(temp)``, fsync, rename into place, fsync the directory.

        The caller registers the file in the index afterwards; until then no reader looks at it.
        """
        tmp = self.temporary_path(relative_path)
        try:
            write(tmp)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return self.publish_temporary(tmp, relative_path)

    def temporary_path(self, relative_path: str) -> Path:
        """Where a file to be published at ``relative_path`` is written first (its directories made): a name the
        sweep of what killed processes left recognizes (:mod:`.maintain.leftovers`). :meth:`publish_temporary`
        publishes it; a caller writing it over time (a streaming merge) deletes it if it gives up."""
        self._require_writable()
        final = self.root / relative_path
        make_dirs(final.parent)  # a new run's directories durable before a file in them is registered
        return final.parent / f".{final.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"

    def publish_temporary(self, tmp: Path, relative_path: str) -> Path:
        """Publish the written ``tmp`` (:meth:`temporary_path`) at ``relative_path``: fsync, rename, fsync the
        directory. ``tmp`` is gone afterwards, published or (on an error) deleted."""
        final = self.root / relative_path
        try:
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, final)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        try:
            fsync_directory(final.parent)
        except BaseException:
            final.unlink(missing_ok=True)  # never registered: not durable, so not published
            raise
        return final

    def publish_files(self, files: list[tuple[str, bytes]]) -> list[Path]:
        """:meth:`publish_file` of many files at once, with the same guarantee: each ``(relative path, bytes)``
        written to a temporary name; then every file synced (several at once), renamed into place, and each
        directory synced once (from :data:`~.durable.SYNCFS_FROM` files of a store whose ``whole_filesystem_syncs``
        is set, their filesystem synced once for the bytes and once for the renames instead). A file whose
        publication failed is not left under its name."""
        self._require_writable()
        root = os.fspath(self.root)
        # Plain strings, not Path objects: a delivery publishes a thousand images.
        split = [os.path.split(os.path.join(root, rel)) for rel, _ in files]
        finals = [os.path.join(parent, name) for parent, name in split]
        parents = list(dict.fromkeys(parent for parent, _ in split))
        make_dirs_many(parents)  # new directories durable before a file in them is registered
        tag = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        temps = [os.path.join(parent, f".{name}.tmp-{tag}-{i}") for i, (parent, name) in enumerate(split)]
        placed: list[str] = []
        # Many files (a delivery's images): their filesystem synced once for the bytes and once for the names.
        whole = (FilesystemSync.open(parents[0])
                 if self.whole_filesystem_syncs and len(files) >= SYNCFS_FROM else None)
        try:
            if whole is None:
                write_files_synced(zip(temps, (data for _, data in files), strict=True))
            else:
                write_files(zip(temps, (data for _, data in files), strict=True))
                whole.sync()
            for tmp, final in zip(temps, finals, strict=True):
                os.replace(tmp, final)
                placed.append(final)
            if whole is None:
                fsync_directories(parents)
            else:
                whole.sync()
        except BaseException:
            for path in (*temps, *placed):  # never registered: not durable, so not published
                Path(path).unlink(missing_ok=True)
            raise
        finally:
            if whole is not None:
                whole.close()
        return [Path(f) for f in finals]


class _Tx:
    """The connection inside a write transaction (``executescript`` would commit it, so not that)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, params: tuple | list = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: list) -> sqlite3.Cursor:
        return self.conn.executemany(sql, rows)

    def executescript_in_tx(self, script: str) -> None:
        for statement in script.split(";"):
            if statement.strip():
                self.conn.execute(statement)


def _write_fsynced(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
