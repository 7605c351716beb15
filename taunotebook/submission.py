"""The plain-Python submission API: ``submit(...)`` starts a run on a backend and returns a ``SubmittedRun``.

``%%tau_submit`` is a thin layer over this module; scripts use it directly::

    import taunotebook
    run = taunotebook.submit("train.py", project="demo", name="sgd")
    run.wait()
    print(run.series("loss").values[-1])
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from tau_collector.cli.durations import DurationError, parse_duration
from tau_collector.collect.stop_rules import parse_stop_if, parse_stop_on_nan
from tau_collector.job.notify import NotifyUrlError, check_notify_url, resolve_notify_urls
from tau_collector.taugrid.ids import MAX_ID_BYTES

from .backends import (
    BACKENDS,
    BackendError,
    BackendUnavailable,
    RunSpec,
    get_backend,
    iter_records,
    poll,
    read_record,
    record_path,
    run_dir,
    tau_home,
    validate_id,
)
from .base_config import load_base_config
from .resources import JobResources
from .submit_config import RUN_CONFIG_FILE, build_config, write_config

__all__ = ["BackendError", "BackendUnavailable", "SubmittedRun", "attach", "new_run_id", "runs", "submit"]

CELL_SCRIPT = "train.py"
RUN_ID_SUFFIX = 7  # "-" and 6 hex digits


def new_run_id(name: str, workspace: str, home: Path | None = None) -> str:
    """``<name>-<6 hex>``: unique among this home's runs and ValidateID-clean."""
    for _ in range(100):
        run_id = f"{name}-{secrets.token_hex(3)}"
        if not run_dir(run_id, workspace, home).exists():
            return run_id
    raise BackendError(f"could not find a free run id for {name!r}")


def _default_name(script: Path | None) -> str:
    if script is None:
        return "cell"
    slug = "".join(c if c.isalnum() or c in "._-" else "-" for c in script.stem.lower()).strip("._-")
    try:
        return validate_id(slug, "name")
    except ValueError:
        return "run"


def stop_rule_flags(stop_on_nan: bool | str | Sequence[str | None] = False, stop_if: str | Sequence[str] = (), *,
                    names: tuple[str, str] = ("stop_on_nan", "stop_if")) -> tuple[str, ...]:
    """The collector flags for ``submit``'s stop rules, each rule checked (``ValueError`` naming ``names``)."""
    nan_name, if_name = names
    if stop_on_nan is True:
        metrics: list[str | None] = [None]
    elif stop_on_nan is False or stop_on_nan is None:
        metrics = []
    else:
        metrics = [stop_on_nan] if isinstance(stop_on_nan, str) else list(stop_on_nan)
    comparisons = [stop_if] if isinstance(stop_if, str) else list(stop_if)
    rules = [parse_stop_on_nan(m, flag=nan_name) for m in metrics]
    rules += [parse_stop_if(str(c), flag=if_name) for c in comparisons]
    return tuple(arg for rule in rules for arg in rule.as_args())


def notify_flags(notify: str | Sequence[str] | None, backend: str, *, name: str = "notify") -> tuple[str, ...]:
    """wrap's ``--notify`` flags for ``submit``'s ``notify``: a URL or several; ``None`` takes
    ``$TAU_NOTIFY_URL`` or the per-user file ``<TAU_HOME>/notify-urls`` (not for the tau backend, which sends
    none); ``[]`` sends none. Each URL is checked (``ValueError`` naming ``name``)."""
    if notify is None:
        if backend == "tau":
            return ()
        try:
            urls = resolve_notify_urls(None)
        except NotifyUrlError as err:
            raise ValueError(str(err)) from None
    else:
        given = [notify] if isinstance(notify, str) else list(notify)
        urls = [check_notify_url(str(u), where=name) for u in given if str(u).strip()]
        if not urls:
            return ("--notify", "") if backend != "tau" else ()  # none, not the defaults
    return tuple(arg for url in urls for arg in ("--notify", url))


def submit(
    script: str | PathLike[str] | None = None,
    *,
    code: str | None = None,
    name: str | None = None,
    project: str | None = None,
    experiment: str | None = None,
    group: str | None = None,
    workspace: str = "default",
    backend: str = "local",
    args: Sequence[str] = (),
    tfevents: Iterable[str] = (),
    env: Mapping[str, str] | None = None,
    cwd: str | PathLike[str] | None = None,
    ray_address: str | None = None,
    dry_run: bool = False,
    out: Callable[[str], object] | None = None,
    config: Mapping[str, Any] | None = None,
    config_file: str | PathLike[str] | None = None,
    config_items: Sequence[str] = (),
    stop_on_nan: bool | str | Sequence[str | None] = False,
    stop_if: str | Sequence[str] = (),
    notify: str | Sequence[str] | None = None,
    resources: JobResources | Mapping[str, Any] | None = None,
    base_config: str | PathLike[str] | None = None,
    checkpoints: str | Sequence[str] = (),
    **resource_options: Any,
) -> SubmittedRun:
    """Submit a training script (a path) or ``code`` (its text) as a run; returns its :class:`SubmittedRun`.

    ``name`` defaults to the script's stem (``cell`` for code); ``group`` to ``name``; ``experiment`` to
    ``group`` (TauGrid's fallback for ``experiment.name``). Every id must pass TauGrid's ``ValidateID``.
    ``project`` defaults to ``default``.
    ``dry_run`` (``tau``, ``ray``) prints what would be sent through ``out`` (TauGrid's run config, or the exact
    ``submit_job`` keyword arguments) and submits nothing.
    ``resources`` (a :class:`~taunotebook.resources.JobResources` or a mapping), or its fields as keyword
    arguments (``gpus=2``, ``image=...``, ``pip=[...]``, ``queue=...``, ``retries=2``, ``time_limit="2h"`` ...),
    say what the job asks of the platform; an option a backend cannot honour is a ``ValueError`` naming it.
    ``base_config`` (``tau`` backend): the team's TauGrid ``tau.yaml``, ours merged in
    (:mod:`taunotebook.base_config`); its ``name`` and ``experiment`` are the defaults of ``name``,
    ``project``, ``experiment`` and ``group``, and a value both set differently is a ``ValueError``.
    ``checkpoints`` (a glob, or several; relative to ``cwd``): the job's checkpoint files or directories, whose
    names end in their step (``ckpt-1000.pt``, ``step_1000/``): the collector registers each, once written, as a
    checkpoint of the run with its step (:mod:`tau_collector.collect.checkpoints`; on ``tau`` relative globs are
    under the pod's working directory and the run's own store ``<output>/store`` holds them);
    ``run.checkpoints()`` lists them. Without it, ``checkpoint_path``'s files are the checkpoints.
    ``config`` (a mapping), ``config_file`` (a ``.json``/``.yaml`` file) and ``config_items`` (``k=v``
    texts, see :mod:`.submit_config`) are the run's hyperparameters: the job reads them from the JSON
    file ``$TAU_RUN_CONFIG`` names, and they are stored with the run.
    ``stop_on_nan`` (True: any metric; a metric name, or several) and ``stop_if`` (``"loss>10"``, also ``<``,
    ``>=``, ``<=``; one or several) stop the job when a rule fires on a logged value (``local``, ``ray``):
    the run ends ``cancelled`` with the rule, the value and its step as its status message.
    ``notify`` (a webhook URL or several; default ``$TAU_NOTIFY_URL`` or ``<TAU_HOME>/notify-urls``; ``[]``:
    none) is POSTed a Slack/Teams-compatible message when a stop rule fires and when the run finishes,
    fails or is cancelled (``local``, ``ray``; see docs/alerts.md).
    Raises ``ValueError`` for bad arguments and :class:`BackendUnavailable` when the backend cannot run
    here — in both cases nothing is submitted.
    """
    if (script is None) == (code is None):
        raise ValueError("pass exactly one of script (a path) or code (the script's text)")
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}")
    script_path = Path(script).resolve() if script is not None else None
    if script_path is not None and not script_path.is_file():
        raise ValueError(f"script {script} does not exist")
    if resources is not None and resource_options:
        raise ValueError(f"give resources= or its options ({', '.join(sorted(resource_options))}), not both")
    job_resources = JobResources.from_options(resources if resources is not None else resource_options)
    base = None
    if base_config is not None:
        if backend != "tau":
            raise ValueError(f"base_config {os.fspath(base_config)} is a TauGrid run config: it is for the tau "
                             f"backend, not {backend}")
        base = load_base_config(base_config)
        known = base.identity()
        name = name if name is not None else base.name
        project = project if project is not None else known.get("project")
        group = group if group is not None else known.get("group")
        experiment = experiment if experiment is not None else known.get("experiment")
    project = project if project is not None else "default"
    name = name if name is not None else _default_name(script_path)
    group = group if group is not None else name
    experiment = experiment if experiment is not None else group
    for value, what in ((name, "name"), (project, "project"), (group, "group"), (experiment, "experiment"),
                        (workspace, "workspace")):
        try:
            validate_id(value, what)
        except ValueError as err:
            if base is None or value not in (base.name, *base.identity().values()):
                raise
            raise ValueError(f"{err}: it comes from the base config {base.path}, whose metrics taunotebook offloads "
                             "(TauGrid then requires ids there); change it in the file") from None
    if len(name) > MAX_ID_BYTES - RUN_ID_SUFFIX:  # the run id <name>-<6 hex> is within the one id limit too
        raise ValueError(f"name is {len(name)} bytes long: the run id it makes (<name>-<6 hex>) must be at most "
                         f"{MAX_ID_BYTES} bytes, so a name at most {MAX_ID_BYTES - RUN_ID_SUFFIX}")
    if dry_run and backend == "local":
        raise ValueError("--dry-run is for the tau backend (it prints the TauGrid run config) and the ray backend "
                         "(the job submission); a local run is just started")
    checkpoint_globs = _checkpoint_globs(checkpoints, None if backend == "tau" else cwd or Path.cwd())
    run_config = build_config(config, config_file, config_items)
    stop_rules = stop_rule_flags(stop_on_nan, stop_if)
    notify_args = notify_flags(notify, backend)
    home = tau_home()
    chosen = get_backend(backend)
    run_id = new_run_id(name, workspace, home)
    directory = run_dir(run_id, workspace, home)
    if script_path is None:
        script_path = directory / CELL_SCRIPT
    if notify_args and notify_args[1] and os.environ.get("TAU_PORTAL_URL"):
        from .client.links import stellar_link

        notify_args += ("--notify-link", stellar_link(run_id, project))
    options: dict[str, Any] = {"dry_run": dry_run, "out": out or print}
    if ray_address:
        options["ray_address"] = ray_address
    spec = RunSpec(run_id=run_id, name=name, project=project, experiment=experiment, group=group,
                   workspace=workspace, script=script_path, args=tuple(args),
                   tfevents=tuple(str(Path(t).resolve()) for t in tfevents), env=dict(env or {}),
                   cwd=Path(cwd).resolve() if cwd is not None else Path.cwd(), home=home, options=options,
                   config_path=directory / RUN_CONFIG_FILE if run_config is not None else None,
                   stop_rules=stop_rules, notify=notify_args, resources=job_resources, base_config=base,
                   checkpoints=checkpoint_globs)
    chosen.check(spec)  # a missing dependency fails here, before anything is written
    wrote = code is not None or run_config is not None
    if code is not None:
        directory.mkdir(parents=True, exist_ok=True)
        script_path.write_text(code if code.endswith("\n") else code + "\n")
    if run_config is not None:
        write_config(directory, run_config)
    try:
        record = chosen.submit(spec)
    except BaseException:
        if wrote and not (directory / "run.json").exists():
            _remove_unsubmitted(directory)
        raise
    if dry_run and wrote:
        _remove_unsubmitted(directory)
    return SubmittedRun(record)


def _checkpoint_globs(checkpoints: str | Sequence[str], cwd: str | PathLike[str] | None) -> tuple[str, ...]:
    """``submit``'s ``checkpoints`` as absolute globs (relative ones under the job's ``cwd``); with ``cwd`` None
    (a TauGrid job, whose working directory is the pod's) relative ones stay relative."""
    given = [checkpoints] if isinstance(checkpoints, (str, PathLike)) else list(checkpoints)
    out = []
    for pattern in given:
        text = os.fspath(pattern) if isinstance(pattern, (str, PathLike)) else None
        if not text or not text.strip():
            raise ValueError(f"checkpoints: {pattern!r} is not a glob of checkpoint files (e.g. 'ckpt/ckpt-*.pt')")
        out.append(os.path.join(Path(cwd).resolve(), os.path.expanduser(text)) if cwd is not None else text)
    return tuple(out)


def _remove_unsubmitted(directory: Path) -> None:
    for path in sorted(directory.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    directory.rmdir()


class SubmittedRun:
    """A handle on one run submitted from this machine; it answers from the run record, so it works after a
    kernel restart. Its ids carry TauGrid's wire names (``experiment_id``, ``run_group_id``)."""

    def __init__(self, record: Mapping[str, Any]) -> None:
        self.record = dict(record)
        self._backend = get_backend(self.record["backend"])

    # -- identity

    @property
    def run_id(self) -> str:
        return self.record["run_id"]

    @property
    def name(self) -> str:
        return self.record["name"]

    @property
    def project(self) -> str:
        return self.record["project"]

    @property
    def experiment_id(self) -> str:
        return self.record["experiment"]  # the run record's key (record files outlive this class's names)

    @property
    def run_group_id(self) -> str:
        return self.record["group"]

    @property
    def workspace(self) -> str:
        return self.record["workspace"]

    @property
    def backend(self) -> str:
        return self.record["backend"]

    @property
    def run_dir(self) -> Path | None:
        return Path(self.record["run_dir"]) if self.record.get("run_dir") else None

    @property
    def config(self) -> dict[str, Any] | None:
        """The hyperparameters the run was submitted with (its ``config.json``), or None."""
        directory = self.run_dir
        path = directory / RUN_CONFIG_FILE if directory is not None else None
        if path is None or not path.is_file():
            return None
        return json.loads(path.read_text(encoding="utf-8"))

    # -- lifecycle

    @property
    def state(self) -> str:
        """TauGrid's run state: ``pending``, ``running``, ``succeeded``, ``failed``, ``cancelled`` (or ``unknown``)."""
        return self._backend.state(self.record)

    @property
    def lifecycle(self):
        """Where the run is, in the backend's words (:class:`taunotebook.lifecycle.Lifecycle`; ``.text`` reads
        ``queued: Job has not started yet ...`` or ``failed: killed by SIGKILL (exit 137)``)."""
        return self._backend.lifecycle(self.record)

    @property
    def resources(self) -> dict[str, Any]:
        """What the job asked for (GPUs, workers, image, queue ...: :class:`~taunotebook.resources.JobResources`
        fields that were given)."""
        return dict(self.record.get("resources") or {})

    @property
    def done(self) -> bool:
        """True once the job and its collector finished: every metric it wrote is in the store."""
        return self._backend.finished(self.record)

    def wait(self, timeout: float | str | None = None) -> str:
        """Block until the run is done; returns its final state. Raises ``TimeoutError`` after ``timeout``:
        seconds (``600``) or a duration text (``"10m"``, ``"1m30s"``; :mod:`tau_collector.cli.durations`)."""
        if isinstance(timeout, str):
            try:
                timeout = parse_duration(timeout)
            except DurationError as exc:
                raise ValueError(f"timeout: {exc}") from None
        if not poll(lambda: self.done, timeout):
            raise TimeoutError(f"run {self.run_id} still {self.state} after {timeout:g}s")
        return self.state

    def cancel(self) -> None:
        """Stop the job; the run ends ``cancelled`` (a run that already ended is left as it is)."""
        self._backend.cancel(self.record)

    def logs(self) -> str:
        """The job log so far: the trainer's non-metric output and errors."""
        return self._backend.logs(self.record)

    def follow(self, write: Callable[[str], object] | None = None) -> None:
        """Write the job log as it grows until the run is done."""
        write = write or (lambda text: (sys.stdout.write(text), sys.stdout.flush()))
        follow = getattr(self._backend, "follow", None)
        if follow is not None:
            follow(self.record, write)
            return
        self.wait()
        write(self.logs())

    # -- metrics

    @property
    def uses_local_store(self) -> bool:
        """True when the run's metrics land in the local expstore (local runs, Ray runs sharing the filesystem)."""
        return self.backend == "local" or (self.backend == "ray" and bool(self.record.get("shared_store")))

    @property
    def source(self) -> str | None:
        """The Portal source holding this run's metrics: ``kusto`` for a run whose collector offloads to ADX
        (a Ray job on a cluster without this machine's store: its record says so), else None (the Portal's
        default). Its pane, ``series()`` and Stellar link name it by themselves."""
        source = self.record.get("source")
        if source is None and "source" not in self.record and self.backend == "ray":
            source = None if self.record.get("shared_store") else "kusto"  # a record from before the field
        return source or None

    def _local_portal(self) -> bool:
        """Read through the local Portal: the run is in the local store, or in ADX and no other Portal is named
        (the local Portal reads the database the jobs offload to, :mod:`taunotebook.kusto_env`)."""
        from .client import ENV_URL

        return self.uses_local_store or (self.source == "kusto" and not os.environ.get(ENV_URL))

    def portal(self):
        """A Portal client for this run (naming its :attr:`source`): the local Portal (started on demand), else
        ``$TAU_PORTAL_URL``'s."""
        if not self._local_portal():
            from .client import PortalClient

            return PortalClient(workspace=self.workspace, project=self.project, source=self.source)
        from .local_portal import portal_client

        return portal_client(self.workspace, self.project, source=self.source)

    def series(self, metric: str, *, full: bool = False, **params: Any):
        """The stored series of ``metric`` through the Portal (``client.Series``: ``.steps``, ``.values``).

        ``full=True``: every stored point instead, non-finite ones and wall times included, as columns
        (``client.SeriesColumns``: ``.step``, ``.wall_time``, ``.value``, ``.to_pandas()``); ``start_step``
        and ``end_step`` pick a window. A local run's only (the Portal's export reads the local store).
        """
        with self.portal() as client:
            if full:
                return client.series_columns(self.run_id, metric, **params)
            return client.series(self.run_id, metric, **params)

    def metrics(self) -> list[str]:
        """The names of the metrics stored for this run so far."""
        from .client import NotFoundError

        with self.portal() as client:
            try:
                return client.metrics(self.run_id).names()
            except NotFoundError:
                return []

    # -- notes and tags (kept in the store beside the run's metrics, through its Portal)

    def note(self, text: str, *, author: str | None = None):
        """Add a note to the run (``client.Note``; ``author`` default: the Portal's user). The run must be in the
        store: it appears there with its first metrics (before that: ``NotFoundError``)."""
        return self._notes_and_tags().note(text, author=author)

    def notes(self) -> list:
        """The run's notes (``client.Note``: ``.text``, ``.author``, ``.created_at``), oldest first."""
        return self._notes_and_tags().notes()

    @property
    def tags(self):
        """The run's tags, read and written through the Portal: ``run.tags["verdict"] = "keep"``,
        ``del run.tags["verdict"]``, ``dict(run.tags)``."""
        return self._notes_and_tags().tags

    def _notes_and_tags(self):
        from .client.run_handle import RunHandle

        return RunHandle(self.portal, self.run_id, self.project)
    def checkpoints(self):
        """The run's checkpoints registered so far (``client.Checkpoint``: ``.step``, ``.uri``, ``.size_bytes``,
        ``.digest``, ``.deleted``), in step order: those the job wrote to its ``checkpoints`` glob (or
        ``checkpoint_path``)."""
        with self.portal() as client:
            return list(client.checkpoints(self.run_id).checkpoints)

    def checkpoint(self, step: int):
        """The checkpoint nearest at or before ``step`` (not a deleted one); ``LookupError`` saying what the run
        has when there is none."""
        with self.portal() as client:
            return client.checkpoint(self.run_id, step)

    def stellar_url(self) -> str:
        """"Open in Stellar" for this run, through the Jupyter server when there is one."""
        from .client.links import jupyter_base_url, stellar_link

        if jupyter_base_url() is not None or not self._local_portal():
            return stellar_link(self.run_id, self.project, source=self.source)
        from .local_portal import ensure_portal

        return stellar_link(self.run_id, self.project, portal_url=ensure_portal(self.workspace).url,
                            source=self.source)

    def pane(self, metrics: Sequence[str] | None = None, *, x: str | None = None):
        """The live loss pane for this run (``taunotebook.pane.LossPane``), polling the run's Portal; ``x`` is its x
        axis (``"step"``, ``"relative"``, ``"wall"`` or a metric's name such as ``"tokens"``)."""
        from .pane import LossPane

        portal = None  # TauGrid's Portal: $TAU_PORTAL_URL / $TAU_PORTAL_TOKEN
        if self._local_portal():
            from .local_portal import ensure_portal

            local = ensure_portal(self.workspace)
            portal = f"{local.url}/?token={local.token}"  # the pane owns (and closes) the client it builds
        return LossPane(self.run_id, list(metrics) if metrics else None, portal=portal, project=self.project,
                        source=self.source, x=x, job=lambda: self.lifecycle, resources=self.resources)

    def __repr__(self) -> str:
        return f"SubmittedRun({self.run_id!r}, backend={self.backend!r}, state={self.state!r})"


def attach(run_id: str, workspace: str | None = None) -> SubmittedRun:
    """Re-attach to a run by id (e.g. after a kernel restart)."""
    home = tau_home()
    if workspace is not None:
        record = read_record(record_path(run_id, workspace, home))
        if record is not None:
            return SubmittedRun(record)
    else:
        for record in iter_records(home):
            if record.get("run_id") == run_id:
                return SubmittedRun(record)
    raise KeyError(f"no run {run_id!r} under {home / 'projects'}; %tau_runs lists the runs")


def runs(workspace: str | None = None, project: str | None = None) -> list[SubmittedRun]:
    """The runs submitted from this machine (all backends), newest first."""
    return [SubmittedRun(r) for r in iter_records(tau_home(), workspace)
            if project is None or r.get("project") == project]
