"""Real TensorBoard event files for the tests, written by real writers, and TensorBoard's own reading of them.

Every file here comes from tensorboardX, torch or TensorBoard's own writer classes; the only
hand-made bytes in the tfevents tests are deliberate corruptions of such files.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from tensorboard.backend.event_processing import event_accumulator as legacy_accumulator
from tensorboard.backend.event_processing import plugin_event_accumulator
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
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


# --- histograms, images and text ------------------------------------------------------------------------------------

MEDIA_T0 = 1_790_000_000.25


def pictures(count: int, height: int, width: int, seed: int) -> np.ndarray:
    """``count`` RGB pictures, ``[count, height, width, 3]`` uint8 (NHWC)."""
    return np.random.default_rng(seed).integers(0, 256, size=(count, height, width, 3), dtype=np.uint8)


def png(picture: np.ndarray) -> bytes:
    """One ``[height, width, channels]`` uint8 picture encoded as PNG (as every writer encodes them)."""
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(picture).save(out, format="PNG")
    return out.getvalue()


def _media_calls(writer, steps: Iterable[int]) -> None:
    """What a training loop logs with torch's or tensorboardX's ``SummaryWriter``: a scalar, histograms of
    several shapes (a constant, integers, raw buckets with empty ends), one image, a batch of images as a
    grid, and markdown text."""
    for step in steps:
        wall = MEDIA_T0 + step
        rng = np.random.default_rng(step)
        writer.add_scalar("loss", 1.0 / (step + 1), step, walltime=wall)
        writer.add_histogram("weights", rng.normal(step, 1.0, 1000), step, walltime=wall)
        writer.add_histogram("constant", np.full(50, 2.5), step, walltime=wall)
        writer.add_histogram("ints", np.arange(step + 10), step, bins="auto", walltime=wall)
        writer.add_histogram_raw("raw", min=-1.0, max=3.0, num=7, sum=6.0, sum_squares=12.0,
                                 bucket_limits=[-0.5, 0.5, 1.5, 2.5, 3.5], bucket_counts=[0, 2, 0, 5, 0],
                                 global_step=step, walltime=wall)
        writer.add_image("sample", pictures(1, 6, 5, step)[0].transpose(2, 0, 1), step, walltime=wall)
        writer.add_images("batch", pictures(4, 8, 6, 100 + step).transpose(0, 3, 1, 2), step, walltime=wall)
        writer.add_text("note", f"step **{step}**: naïve ✓", step, walltime=wall)


def write_torch_media(logdir: Path, steps: Iterable[int] = range(3), *, name: str | None = None,
                      purge_step: int | None = None) -> Path:
    """``torch.utils.tensorboard.SummaryWriter``: ``add_histogram(_raw)`` (``histo``), ``add_image(s)``
    (``Summary.Image``), ``add_text`` (text plugin tensors), and a scalar."""
    from torch.utils.tensorboard import SummaryWriter

    tmp = _scratch(logdir)
    writer = SummaryWriter(str(tmp), purge_step=purge_step, max_queue=1_000_000, flush_secs=3600)
    _media_calls(writer, steps)
    writer.close()
    path = _move_single_file(tmp, logdir, name)
    shutil.rmtree(tmp)
    return path


def write_tensorboardx_media(logdir: Path, steps: Iterable[int] = range(3), *, name: str | None = None) -> Path:
    """The same calls through ``tensorboardX.SummaryWriter``."""
    from tensorboardX import SummaryWriter

    tmp = _scratch(logdir)
    writer = SummaryWriter(str(tmp), max_queue=1_000_000, flush_secs=3600)
    _media_calls(writer, steps)
    writer.close()
    path = _move_single_file(tmp, logdir, name)
    shutil.rmtree(tmp)
    return path


def tf_image_value(tag: str, batch: np.ndarray, *, max_outputs: int = 3,
                   metadata: bool = True) -> summary_pb2.Summary.Value:
    """What ``tf.summary.image`` writes for an NHWC uint8 batch: a string tensor ``[width, height, png…]`` of the
    first ``max_outputs`` pictures under the images plugin."""
    from tensorboard.plugins.image import metadata as image_metadata

    height, width = batch.shape[1:3]
    tensor = tensor_util.make_tensor_proto(
        [str(width).encode(), str(height).encode(), *(png(picture) for picture in batch[:max_outputs])])
    value = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
    if metadata:
        value.metadata.CopyFrom(image_metadata.create_summary_metadata(display_name=None, description=""))
    return value


def tf_media_events(steps: Iterable[int] = range(3)) -> list[event_pb2.Event]:
    """The events TensorFlow's ``tf.summary`` (and Keras's TensorBoard callback) writes for histograms, images
    and text, made with TensorBoard's own numpy summary functions: ``[k, 3]`` float64 histogram tensors
    (empty data included), several images per event, text tensors of rank 0 to 3."""
    from tensorboard.plugins.histogram import summary_v2 as histogram_summary
    from tensorboard.plugins.text import summary_v2 as text_summary

    events = []
    for index, step in enumerate(steps):
        rng = np.random.default_rng(step)
        event = event_pb2.Event(wall_time=MEDIA_T0 + step, step=step)
        values = event.summary.value
        values.extend(histogram_summary.histogram_pb("dense/kernel", rng.normal(size=(20, 30)), buckets=12).value)
        values.extend(histogram_summary.histogram_pb("empty", np.zeros(0), buckets=4).value)
        values.extend(histogram_summary.histogram_pb("one_value", np.array([7.0]), buckets=5).value)
        values.append(tf_image_value("inputs", pictures(5, 7, 9, 200 + step), max_outputs=3, metadata=index == 0))
        values.extend(text_summary.text_pb("scalar_text", f"step {step}").value)
        values.extend(text_summary.text_pb("table", np.array([["a", "b"], ["ç", f"{step}"]])).value)
        values.extend(text_summary.text_pb("cube", np.array([f"{i}" for i in range(8)]).reshape(2, 2, 2)).value)
        values.add(tag="loss", simple_value=0.5 / (step + 1))
        if index:  # later events of a tag without metadata, as TF1's writer strips it
            for value in values:
                if value.tag in ("table", "dense/kernel"):
                    value.ClearField("metadata")
        events.append(event)
    return events


def write_tf_media(logdir: Path, steps: Iterable[int] = range(3), *, name: str | None = None) -> Path:
    """:func:`tf_media_events` through TensorBoard's ``EventFileWriter``."""
    return write_events(logdir, tf_media_events(steps), name=name)


def reference_media(path: Path | str, kind: str) -> list[dict]:
    """TensorBoard's own reading of one event file's histograms, images or text, as ``dump --kind`` prints them
    (without ``file``): ``EventFileLoader`` (its ``data_compat`` and ``dataclass_compat``), each tag's plugin from
    its first metadata, and each tensor through ``make_ndarray`` as the plugins read it."""
    from tensorboard.util import img_mime_type_detector

    plugins: dict[str, str] = {}
    out = []
    for event in EventFileLoader(str(path)).Load():
        for value in event.summary.value:
            plugin = plugins.setdefault(value.tag, value.metadata.plugin_data.plugin_name)
            if plugin != kind or value.WhichOneof("value") != "tensor":
                continue
            array = tensor_util.make_ndarray(value.tensor)
            row = {"tag": value.tag, "step": event.step, "wall_time": event.wall_time}
            if kind == "histograms":
                row["buckets"] = array.tolist()
            elif kind == "images":
                images = array.tolist()[2:]
                types = {img_mime_type_detector.from_bytes(image) for image in images}
                row.update(width=int(array[0]), height=int(array[1]),
                           images=[hashlib.sha256(image).hexdigest() for image in images],
                           content_type=types.pop() if len(types) == 1 else None)
            else:
                row.update(text=[item.decode("utf-8") for item in array.reshape(-1).tolist()], shape=list(array.shape))
            out.append(row)
    return out


def accumulator_histograms(run_directory: Path | str) -> dict[str, list[tuple[int, float, list]]]:
    """TensorBoard's served view of a run's histograms (plugin ``EventAccumulator``, every tensor kept, its purge
    on ``SessionLog.START``): tag -> [(step, wall_time, buckets)]."""
    acc = plugin_event_accumulator.EventAccumulator(str(run_directory), size_guidance={"tensors": 0})
    acc.Reload()
    return {tag: [(te.step, te.wall_time, tensor_util.make_ndarray(te.tensor_proto).tolist()) for te in acc.Tensors(tag)]
            for tag in acc.PluginTagToContent("histograms")}
