"""Every stored point of a series as columns: the Portal's export read into numpy, with ``to_pandas()``.

The client reads the export's CSV as it streams in (pyarrow's incremental CSV reader over the
HTTP body), so it holds the columns it returns and one batch besides, never the text. NaN and
±Inf come back as float NaN/±inf; a point without a wall time has NaN there.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["SeriesColumns", "read_export_csv"]


@dataclass(frozen=True)
class SeriesColumns:
    """``step`` (int64), ``wall_time`` (float64 seconds since the epoch, NaN when unknown), ``value`` (float64)."""

    run_id: str
    metric: str
    step: np.ndarray
    wall_time: np.ndarray
    value: np.ndarray
    start_step: int | None = None
    end_step: int | None = None

    def __len__(self) -> int:
        return int(self.step.size)

    @property
    def steps(self) -> np.ndarray:
        return self.step

    @property
    def values(self) -> np.ndarray:
        return self.value

    @property
    def non_finite_count(self) -> int:
        return int((~np.isfinite(self.value)).sum())

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` with columns ``step``, ``wall_time`` (UTC timestamps) and ``value``."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("SeriesColumns.to_pandas() needs pandas: pip install pandas (the columns are "
                              "numpy arrays as they are: .step, .wall_time, .value)") from None
        wall = pd.to_datetime(wall_datetimes(self.wall_time), utc=True)
        return pd.DataFrame({"step": self.step, "wall_time": wall, "value": self.value})


_US_LIMIT = float(2**63 - 1024)  # the largest float64 below 2^63: its microseconds fit int64


def wall_datetimes(seconds: np.ndarray) -> np.ndarray:
    """Wall times (float seconds, NaN unknown) as ``datetime64[us]`` (NaT unknown): the store's microseconds
    reach far past 2262, where pandas' ``unit="s"`` (nanoseconds) stops. Float seconds round the ends of int64
    microseconds to 2^63, which is held to the last float below it; a time beyond is NaT."""
    us = np.asarray(seconds, dtype=np.float64) * 1e6
    valid = np.isfinite(us) & (np.abs(us) <= 2.0**63)
    out = np.full(us.shape, np.datetime64("NaT"), dtype="datetime64[us]")
    out[valid] = np.round(np.clip(us[valid], -_US_LIMIT, _US_LIMIT)).astype(np.int64).view("datetime64[us]")
    return out


class _Chunks(io.RawIOBase):
    """A readable file over an iterator of byte chunks (the HTTP body as it arrives)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n


def read_export_csv(chunks: Iterator[bytes], run_id: str, metric: str, start_step: int | None = None,
                    end_step: int | None = None) -> SeriesColumns:
    """The export's CSV body (``step,wall_time,value``) as :class:`SeriesColumns`."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    convert = pcsv.ConvertOptions(null_values=[""], column_types={
        "step": pa.int64(), "wall_time": pa.float64(), "value": pa.float64()})
    reader = pcsv.open_csv(io.BufferedReader(_Chunks(chunks), 1 << 16), convert_options=convert,
                           read_options=pcsv.ReadOptions(block_size=1 << 22))
    steps, walls, values = [], [], []
    for batch in reader:
        steps.append(batch.column("step").to_numpy())
        walls.append(batch.column("wall_time").fill_null(np.nan).to_numpy())
        values.append(batch.column("value").to_numpy())
    if not steps:
        return SeriesColumns(run_id, metric, np.empty(0, np.int64), np.empty(0), np.empty(0), start_step, end_step)
    return SeriesColumns(run_id, metric, np.concatenate(steps), np.concatenate(walls), np.concatenate(values),
                         start_step, end_step)
