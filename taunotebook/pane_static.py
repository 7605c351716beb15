"""The loss pane's static picture: what the poller holds, copied into a :class:`~taunotebook.pane_picture.Snapshot`,
and when it is redrawn (the static output shown where the live view cannot load; :mod:`taunotebook.pane`)."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from taunotebook.pane_picture import Snapshot

__all__ = ["FALLBACK_SECONDS", "StaticPicture", "snapshot_of"]

FALLBACK_SECONDS = 5.0  # the static picture is redrawn at most this often while the run lives (and when it ends)


class StaticPicture:
    """Redraws the picture when what it shows changed: at most every :data:`FALLBACK_SECONDS` while the run lives,
    at once when the primary run's state changes and when polling stops (its final picture)."""

    def __init__(self) -> None:
        self.key: tuple | None = None  # what the picture last showed
        self.drawn_at = 0.0

    def due(self, state: str, shown: Sequence[str], held: Mapping[tuple[str, str], Any], now: float,
            final: bool, media: tuple = ()) -> tuple | None:
        """The key of what would be drawn when a redraw is due now, else None; ``media`` is what the media shown
        depend on (:func:`~taunotebook.pane_static_media.media_key`)."""
        key = (state, tuple(shown), tuple((k, len(h.steps), h.last_step) for k, h in held.items()), media)
        if key == self.key:
            return None
        if not final and self.key is not None and self.key[0] == state and now - self.drawn_at < FALLBACK_SECONDS:
            return None
        return key

    def drawn(self, key: tuple, now: float) -> None:
        self.key, self.drawn_at = key, now

    def refresh(self, draw: Callable[[], bool], state: str, shown: Sequence[str],
                held: Mapping[tuple[str, str], Any], now: float, final: bool, media: tuple = ()) -> bool:
        """Call ``draw`` when a redraw is due; False when ``draw`` says the pane is gone."""
        key = self.due(state, shown, held, now, final, media)
        if key is None:
            return True
        if not draw():
            return False
        self.drawn(key, now)
        return True


def snapshot_of(run_id: str, runs: Sequence[str], view: Any, state: str, shown: Sequence[str],
                held: Mapping[tuple[str, str], Any], fixed_metrics: Sequence[str] | None,
                media: Any = None) -> Snapshot:
    """What the pane shows now, copied (the poller's thread goes on changing what it holds); ``view`` is the
    primary run's view (its names, catalog entries and status message) or None before the first answer; ``media``
    the run's media at the step cursor (:class:`~taunotebook.pane_static_media.MediaPicture`)."""
    names = [n for n in view.names if not n.startswith("tau/")] if view is not None and view.names else []
    entries = view.entries if view is not None else {}
    latest = {m: (e.get("latest_value"), e.get("latest_step")) for m, e in entries.items()}
    series = {k: (array("q", h.steps), array("d", h.values)) for k, h in held.items()}
    why = view.status_message if view is not None and state in ("failed", "cancelled", "canceled") else ""
    return Snapshot(run_id=run_id, state=state, status=why, runs=tuple(runs), metrics=tuple(shown),
                    total_metrics=len(fixed_metrics or names), series=series, latest=latest, media=media)
