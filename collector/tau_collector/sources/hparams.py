"""TensorBoard HParams in event files: a run's hyperparameters, and the ``add_hparams`` sub-run that holds them.

The HParams plugin (``tensorboard/plugins/hparams``) writes summary values tagged
``_hparams_/experiment``, ``_hparams_/session_start_info`` and ``_hparams_/session_end_info``
with plugin ``hparams``, each carrying an ``HParamsPluginData`` message as plugin content. The
session start's ``hparams`` map (name → ``google.protobuf.Value``) is the run's configuration. We
read the few fields we need from the wire format here rather than depend on TensorBoard's protos.

``SummaryWriter.add_hparams`` (torch and tensorboardX) writes into a new sub-directory of the
writer's logdir (named by the time, or ``run_name``): experiment, session start and session end,
then one scalar per metric value. TensorBoard shows that directory as a run of its own; for us it
belongs to the run whose writer made it (:func:`scan_hparams` tells it by that layout -- an HParams
session that ends before any other value): its hyperparameters are that run's configuration and its
metric values are that run's metrics under their own tags (``hparam/accuracy``), not prefixed by a
directory name that differs from run to run. A run that opens a session and then logs its training
(TensorFlow's ``hp.hparams``) is a run of its own, with its session as its configuration.

Only the first records of a run's first event file are read (:data:`SCAN_RECORDS`,
:data:`SCAN_BYTES`): both writers put the session there.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any

from tau_collector.sources.event_file import EventDecodeError, decode_event
from tau_collector.sources.protobuf_wire import fields
from tau_collector.sources.tf_record import StopReason, scan_file

__all__ = ["HPARAMS_FORMAT", "HParamsScan", "session_hparams", "scan_hparams"]

HPARAMS_FORMAT = "tensorboard-hparams"
PLUGIN = "hparams"
SESSION_START = "_hparams_/session_start_info"
SESSION_END = "_hparams_/session_end_info"
TAG_PREFIX = "_hparams_/"
SCAN_RECORDS = 64
SCAN_BYTES = 256 * 1024
_MAX_DEPTH = 32
_DOUBLE = struct.Struct("<d")


@dataclass(frozen=True, slots=True)
class HParamsScan:
    """What the first records of an event file say.

    ``hparams``: the session's hyperparameters (None without a session start); ``uri``: the event
    file holding them; ``attached``: True for ``add_hparams``'s sub-run layout, False for a run of
    its own, None while the file holds too little to tell (only its version record, so far);
    ``final``: the records scanned are all a scan ever looks at, so a longer file changes nothing.
    """

    hparams: dict[str, Any] | None
    uri: str | None
    attached: bool | None
    final: bool = False


def _value(data: bytes, depth: int = 0) -> Any:
    """A ``google.protobuf.Value``: null 1, number 2 (double), string 3, bool 4, struct 5, list 6."""
    if depth > _MAX_DEPTH:
        raise ValueError(f"hparam value nested deeper than {_MAX_DEPTH} levels")
    out: Any = None
    for number, wire, raw in fields(data):
        if number == 1 and wire == 0:
            out = None
        elif number == 2 and wire == 1:
            out = _DOUBLE.unpack(raw)[0]
            if not math.isfinite(out):
                raise ValueError(f"hparam value {out} is not finite; JSON cannot carry it")
        elif number == 3 and wire == 2:
            out = raw.decode("utf-8", "replace")
        elif number == 4 and wire == 0:
            out = bool(raw)
        elif number == 5 and wire == 2:
            out = _struct(raw, depth + 1)
        elif number == 6 and wire == 2:
            out = [_value(item, depth + 1) for n, w, item in fields(raw) if n == 1 and w == 2]
    return out


def _struct(data: bytes, depth: int) -> dict[str, Any]:
    """A ``google.protobuf.Struct`` (field 1: map entries of key 1 and Value 2), or a session's ``hparams`` map."""
    out: dict[str, Any] = {}
    for number, wire, entry in fields(data):
        if number != 1 or wire != 2:
            continue
        key, value = "", None
        for n, w, raw in fields(entry):
            if n == 1 and w == 2:
                key = raw.decode("utf-8", "replace")
            elif n == 2 and w == 2:
                value = _value(raw, depth)
        out[key] = value
    return out


def session_hparams(content: bytes) -> dict[str, Any] | None:
    """The ``hparams`` of an ``HParamsPluginData`` holding a session start (field 3), else None.

    Raises ValueError when the content is not a readable message.
    """
    for number, wire, raw in fields(content):
        if number == 3 and wire == 2:
            return _struct(raw, 0)  # SessionStartInfo.hparams is its field 1, the same shape as a Struct
    return None


def scan_hparams(path: str) -> HParamsScan:
    """Read the first records of the event file ``path`` for an HParams session (see the module docstring)."""
    try:
        scan = scan_file(path, 0, SCAN_BYTES)
    except OSError:
        return HParamsScan(None, None, None)
    hparams: dict[str, Any] | None = None
    attached: bool | None = None
    frames = scan.frames[:SCAN_RECORDS]
    for _offset, payload in frames:
        try:
            event = decode_event(payload)
        except EventDecodeError:
            attached = bool(attached)
            break
        what = event.WhichOneof("what")
        if what == "file_version":
            continue
        if what != "summary":
            attached = bool(attached)
            continue
        for value in event.summary.value:
            tag = value.tag
            if value.metadata.plugin_data.plugin_name == PLUGIN and tag.startswith(TAG_PREFIX):
                if tag == SESSION_START and hparams is None:
                    try:
                        hparams = session_hparams(bytes(value.metadata.plugin_data.content))
                    except (ValueError, UnicodeDecodeError):
                        hparams = None
                elif tag == SESSION_END and attached is None:
                    attached = True
            elif attached is None:
                attached = False
        if attached is not None and hparams is not None:
            break
    full = len(frames) >= SCAN_RECORDS or scan.checkpoint >= SCAN_BYTES - 64 * 1024
    if attached is None and (full or scan.stop is StopReason.CRC_MISMATCH):
        attached = False  # a file that says nothing in its first records (or cannot be read on) is a plain run
    final = attached is not None and (hparams is not None or full or scan.stop is StopReason.CRC_MISMATCH)
    return HParamsScan(hparams, path if hparams is not None else None, attached, final)
