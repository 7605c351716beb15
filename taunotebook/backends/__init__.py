"""Submission backends for ``%%tau_submit``: the run spec, run records, TauGrid's ID rule and backend lookup.

A backend turns a :class:`RunSpec` into a running job and answers for it afterwards from the run
record it wrote (``run.json`` in the run's directory under TauGrid's workspace layout
``<TAU_HOME>/projects/<workspace>/runs/<run>/``), so runs can be listed, re-attached and cancelled
from any process, also after a kernel restart. An id too long for one file name (TauGrid's ids may be
longer than the 255 bytes a file system allows) names its directory by :func:`path_component`; the
record keeps the id itself, and every reader finds a run through its record.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tau_collector.taugrid import ids

from ..base_config import BaseConfig
from ..home import tau_home
from ..resources import JobResources

__all__ = [
    "BACKENDS",
    "TERMINAL_STATES",
    "Backend",
    "BackendError",
    "BackendUnavailable",
    "RunSpec",
    "get_backend",
    "iter_records",
    "path_component",
    "read_record",
    "record_path",
    "run_dir",
    "tau_home",
    "validate_id",
    "write_record",
]

BACKENDS = ("local", "ray", "tau")
TERMINAL_STATES = frozenset({"succeeded", "failed", "cancelled"})
RECORD = "run.json"
RECORD_SCHEMA = "taunotebook.run_record.v1"
NAME_MAX = 255  # bytes in one file name (ext4, xfs, btrfs, tmpfs, overlayfs)
_KEPT = 200  # bytes of a long id kept readable in its file name


class BackendError(Exception):
    """A submission or run operation failed; the message says what to do next."""


class BackendUnavailable(BackendError):
    """The backend's dependency (a package, a CLI, a cluster address) is missing."""


def validate_id(value: str, what: str) -> str:
    """TauGrid's ``ValidateID`` (:mod:`tau_collector.taugrid.ids`): ``value``, or a ``ValueError`` naming ``what``."""
    return ids.validate_id(what, value)


def path_component(value: str) -> str:
    """``value`` as one file name: itself when it fits in :data:`NAME_MAX` bytes, else its first 200 bytes, ``-``
    and 16 hex digits of its SHA-256 (217 bytes; two ids sharing a long prefix stay apart)."""
    raw = value.encode("utf-8", "surrogatepass")
    if len(raw) <= NAME_MAX:
        return value
    digest = hashlib.sha256(raw).hexdigest()[:16]
    return raw[:_KEPT].decode("utf-8", "ignore") + "-" + digest


def run_dir(run_id: str, workspace: str, home: Path | None = None) -> Path:
    """TauGrid's workspace layout: ``<home>/projects/<workspace>/runs/<run>``, each id a :func:`path_component`."""
    return (home or tau_home()) / "projects" / path_component(workspace) / "runs" / path_component(run_id)


@dataclass(frozen=True)
class RunSpec:
    """What to run and under which identity; every id already passed :func:`validate_id`."""

    run_id: str
    name: str
    project: str
    experiment: str
    group: str
    workspace: str
    script: Path  # the training script (the cell body is written to a file first)
    args: tuple[str, ...] = ()
    tfevents: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    home: Path | None = None
    options: Mapping[str, Any] = field(default_factory=dict)  # backend-specific (ray address, dry run, ...)
    config_path: Path | None = None  # the run's configuration (config.json in the run directory), if it has one
    stop_rules: tuple[str, ...] = ()  # collector flags, e.g. ("--stop-if", "loss>10"): the job stops when one fires
    notify: tuple[str, ...] = ()  # wrap's webhook flags, e.g. ("--notify", URL, "--notify-link", STELLAR_URL)
    resources: JobResources = field(default_factory=JobResources)  # GPUs, image, queue ... (taunotebook.resources)
    base_config: BaseConfig | None = None  # the team's tau.yaml (tau backend), see taunotebook.base_config
    checkpoints: tuple[str, ...] = ()  # absolute globs of the job's checkpoints, registered with their step

    @property
    def run_dir(self) -> Path:
        return run_dir(self.run_id, self.workspace, self.home)

    def identity(self) -> dict[str, str]:
        return {"run_id": self.run_id, "name": self.name, "project": self.project, "experiment": self.experiment,
                "group": self.group, "workspace": self.workspace}


class Backend(Protocol):
    """One way of running a job. Records are plain dicts persisted as ``run.json``."""

    name: str

    def check(self, spec: RunSpec) -> None:
        """Raise :class:`BackendUnavailable` when the job cannot be submitted here; submits nothing."""

    def submit(self, spec: RunSpec) -> dict[str, Any]:
        """Start the job and return its run record (already written)."""

    def state(self, record: Mapping[str, Any]) -> str:
        """TauGrid's run state: pending, running, succeeded, failed, cancelled (or unknown)."""

    def finished(self, record: Mapping[str, Any]) -> bool:
        """True once the job and its collector are gone (its metrics are all delivered)."""

    def logs(self, record: Mapping[str, Any]) -> str:
        """The job log so far."""

    def cancel(self, record: Mapping[str, Any]) -> None:
        """Ask the job to stop; its run ends ``cancelled``."""


def get_backend(name: str) -> Backend:
    """The backend called ``name``; its optional dependencies are imported only when used."""
    if name == "local":
        from .local import LocalBackend

        return LocalBackend()
    if name == "ray":
        from .ray import RayBackend

        return RayBackend()
    if name == "tau":
        from .tau import TauBackend

        return TauBackend()
    raise ValueError(f"backend {name!r} is not one of {', '.join(BACKENDS)}")


def record_path(run_id: str, workspace: str, home: Path | None = None) -> Path:
    return run_dir(run_id, workspace, home) / RECORD


def write_record(directory: Path, record: Mapping[str, Any]) -> None:
    """Write ``run.json`` atomically so a concurrent reader never sees half of it."""
    directory.mkdir(parents=True, exist_ok=True)
    data = json.dumps({"schema_version": RECORD_SCHEMA, **record}, indent=2, sort_keys=True) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=".run.json.", dir=directory)
    with os.fdopen(fd, "w") as f:
        f.write(data)
    os.replace(tmp, directory / RECORD)


def read_record(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("schema_version") == RECORD_SCHEMA else None


def iter_records(home: Path | None = None, workspace: str | None = None) -> Iterator[dict[str, Any]]:
    """Every run record under ``home``, newest first."""
    root = (home or tau_home()) / "projects"
    pattern = f"{path_component(workspace)}/runs/*/{RECORD}" if workspace else f"*/runs/*/{RECORD}"
    records = [r for r in (read_record(p) for p in root.glob(pattern)) if r is not None]
    records.sort(key=lambda r: (r.get("created_at", 0), r.get("run_id", "")), reverse=True)
    yield from records


def poll(predicate: Callable[[], bool], timeout: float | None, interval: float = 0.2) -> bool:
    """Call ``predicate`` until it is true (→ True) or ``timeout`` seconds passed (→ False)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not predicate():
        if deadline is not None and time.monotonic() >= deadline:
            return False
        time.sleep(interval)
    return True
