"""Real TensorBoard event files for the tests, written by real writers, and TensorBoard's own reading of them.

Every file here comes from tensorboardX, torch or TensorBoard's own writer classes; the only
hand-made bytes in the tfevents tests are deliberate corruptions of such files.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from tensorboard.backend.event_processing import event_accumulator as legacy_accumulator
from tensorboard.backend.event_processing import plugin_event_accumulator
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util

Scalar = tuple[str, int, float, float]  # tag, step, value, wall_time


def _move_single_file(tmp: Path, logdir: Path, name: str | None) -> Path:
    """Move the one event file a writer made in ``tmp`` into ``logdir`` (renamed to ``name`` if given).

    Writers name files by the current second, host and pid; tests that need a segment order
    give explicit names instead of sleeping between writers.
    """
    (written,) = [p for p in tmp.iterdir() if "tfevents" in p.name]
    logdir.mkdir(parents=True, exist_ok=True)
    target = logdir / (name or written.name)
    shutil.move(str(written), str(target))
    return target


def _scratch(logdir: Path) -> Path:
    logdir.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=".writer-", dir=logdir.parent))


def write_tensorboardx(logdir: Path, scalars: Iterable[Scalar], *, name: str | None = None,
                       purge_step: int | None = None) -> Path:
    """``tensorboardX.SummaryWriter.add_scalar`` for each scalar (``simple_value`` events)."""
    from tensorboardX import SummaryWriter

    tmp = _scratch(logdir)
    writer = SummaryWriter(str(tmp), purge_step=purge_step, max_queue=1_000_000, flush_secs=3600)
    for tag, step, value, wall_time in scalars:
        writer.add_scalar(tag, value, step, walltime=wall_time)
    writer.close()
    path = _move_single_file(tmp, logdir, name)
    shutil.rmtree(tmp)
    return path


def write_torch(logdir: Path, scalars: Iterable[Scalar], *, name: str | None = None,
                purge_step: int | None = None) -> Path:
    """``torch.utils.tensorboard.SummaryWriter.add_scalar`` for each scalar."""
    from torch.utils.tensorboard import SummaryWriter

    tmp = _scratch(logdir)
    writer = SummaryWriter(str(tmp), purge_step=purge_step, max_queue=1_000_000, flush_secs=3600)
    for tag, step, value, wall_time in scalars:
        writer.add_scalar(tag, value, step, walltime=wall_time)
    writer.close()
    path = _move_single_file(tmp, logdir, name)
    shutil.rmtree(tmp)
    return path


def write_tensorboard_summary(logdir: Path, scalars: Iterable[Scalar], *, name: str | None = None) -> Path:
    """``tensorboard.summary.Writer.add_scalar``: rank-0 float32 tensors under the ``scalars`` plugin."""
    from tensorboard.summary import Writer

    tmp = _scratch(logdir)
    writer = Writer(str(tmp))
    for tag, step, value, wall_time in scalars:
        writer.add_scalar(tag, value, step, wall_time=wall_time)
    writer.close()
    path = _move_single_file(tmp, logdir, name)
    shutil.rmtree(tmp)
    return path


def write_events(logdir: Path, events: Iterable[event_pb2.Event], *, name: str | None = None) -> Path:
    """Arbitrary ``Event`` protos through TensorBoard's ``EventFileWriter`` (its real TFRecord writer).

    The writer first writes its own ``file_version`` event, as every writer does.
    """
    tmp = _scratch(logdir)
    writer = EventFileWriter(str(tmp), max_queue_size=1_000_000, flush_secs=3600)
    for event in events:
        writer.add_event(event)
    writer.close()
    path = _move_single_file(tmp, logdir, name)
    shutil.rmtree(tmp)
    return path


def scalars_metadata() -> summary_pb2.SummaryMetadata:
    return summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"),
        data_class=summary_pb2.DATA_CLASS_SCALAR,
    )


def tensor_event(tag: str, step: int, wall_time: float, tensor: tensor_pb2.TensorProto,
                 *, plugin: str | None = "scalars") -> event_pb2.Event:
    """An event with one tensor value; ``plugin=None`` leaves out the metadata (as on a tag's later events)."""
    event = event_pb2.Event(wall_time=wall_time, step=step)
    value = event.summary.value.add(tag=tag, tensor=tensor)
    if plugin is not None:
        value.metadata.plugin_data.plugin_name = plugin
        if plugin == "scalars":
            value.metadata.data_class = summary_pb2.DATA_CLASS_SCALAR
    return event


def scalar_tensor(value, dtype) -> tensor_pb2.TensorProto:
    """TensorBoard's own ``make_tensor_proto`` of a numpy scalar (typed repeated field, rank 0)."""
    return tensor_util.make_tensor_proto(np.asarray(value, dtype=dtype))


def raw_tensor(dtype: int, *, shape: tuple[int, ...] = (), **fields) -> tensor_pb2.TensorProto:
    """A TensorProto with explicit fields (bfloat16 bit patterns, ``tensor_content``, odd dtypes)."""
    dims = [tensor_shape_pb2.TensorShapeProto.Dim(size=n) for n in shape]
    return tensor_pb2.TensorProto(dtype=dtype, tensor_shape=tensor_shape_pb2.TensorShapeProto(dim=dims),
                                  **fields)


def restart_event(step: int, wall_time: float) -> event_pb2.Event:
    return event_pb2.Event(step=step, wall_time=wall_time,
                           session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START))


def reference_scalars(run_directory: Path | str) -> dict[str, list[tuple[int, float, float]]]:
    """TensorBoard's own view of a run's scalars: tag -> [(step, wall_time, value)] in load order.

    Uses the plugin ``EventAccumulator`` that TensorBoard's Python backend serves from, keeping
    every point (no reservoir sampling), with its purge rule on ``SessionLog.START``.
    """
    acc = plugin_event_accumulator.EventAccumulator(str(run_directory), size_guidance={"tensors": 0})
    acc.Reload()
    try:
        tags = acc.PluginTagToContent("scalars")
    except KeyError:
        return {}
    out = {}
    for tag in tags:
        out[tag] = [
            (te.step, te.wall_time, float(tensor_util.make_ndarray(te.tensor_proto).item()))
            for te in acc.Tensors(tag)
        ]
    return out


def legacy_reference_scalars(run_directory: Path | str) -> dict[str, list[tuple[int, float, float]]]:
    """The legacy ``event_accumulator``'s view (``simple_value`` scalars; purges on every START)."""
    acc = legacy_accumulator.EventAccumulator(str(run_directory), size_guidance={"scalars": 0})
    acc.Reload()
    return {
        tag: [(se.step, se.wall_time, se.value) for se in acc.Scalars(tag)]
        for tag in acc.Tags()["scalars"]
    }


def by_tag(observations, prefix: str = "") -> dict[str, list[tuple[int, float, float]]]:
    """Our observations grouped like :func:`reference_scalars` (metric names without ``prefix/``)."""
    out: dict[str, list[tuple[int, float, float]]] = {}
    cut = len(prefix) + 1 if prefix else 0
    for obs in observations:
        out.setdefault(obs.metric[cut:], []).append((obs.step, obs.wall_time, obs.value))
    return out


def event_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if "tfevents" in p.name)


def segment_name(seq: int) -> str:
    """A writer-style file name whose sort order is ``seq``'s."""
    return f"events.out.tfevents.{1_700_000_000 + seq:010d}.testhost.{os.getpid()}.0"
