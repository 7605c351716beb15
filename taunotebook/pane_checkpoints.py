"""The loss pane's checkpoint marks: each shown run's checkpoints and retries read from the local Portal's
``/runs/{run_id}/checkpoints`` for the ``checkpoints`` and ``compare_checkpoints`` traits (the contract in
:mod:`taunotebook.pane`)."""

from __future__ import annotations

from taunotebook.client import NotFoundError, PortalClient, PortalError
from taunotebook.pane_reads import ROUTE_NOT_FOUND

__all__ = ["CHECKPOINT_SECONDS", "CheckpointMarks"]

CHECKPOINT_SECONDS = 5.0  # how often the primary run's checkpoints are read while it runs


class CheckpointMarks:
    """Reads each shown run's checkpoints every :data:`CHECKPOINT_SECONDS` while the primary run runs and on each
    poll once it ended; :meth:`read` answers the new values of the ``checkpoints`` (the primary run's) and
    ``compare_checkpoints`` (the compared runs that have any) traits, each None when unchanged. A Portal without
    the route (TauGrid's: 404) is not asked again."""

    def __init__(self, client: PortalClient, source: str | None) -> None:
        self.client = client
        self.source = source
        self.available = True
        self.read_at: float | None = None
        self.sent: dict | None = None
        self.compared_sent: dict = {}
        self.requests = 0

    def read(self, runs: list[str], run_id: str, project: str | None, now: float,
             ended: bool) -> tuple[dict | None, dict | None]:
        if not self.available or (self.read_at is not None and now - self.read_at < CHECKPOINT_SECONDS
                                  and not ended):
            return None, None
        self.read_at = now
        answers: dict[str, dict] = {}
        for run in runs:
            self.requests += 1
            try:
                answer = self.client.checkpoints(run, project=project if run == run_id else None, source=self.source)
            except NotFoundError as err:
                if err.message == ROUTE_NOT_FOUND:
                    self.available = False  # TauGrid's Portal: no checkpoints to mark
                    return None, None
                continue  # a run not (yet) in the store: nothing to mark
            except PortalError:
                return None, None  # the markers wait for the next read; the metrics go on either way
            answers[run] = {
                "checkpoints": [{"step": c.step, "uri": c.uri, "size_bytes": c.size_bytes, "deleted": c.deleted}
                                for c in answer.checkpoints],
                "retries": [{"step": r.step, "attempt": r.attempt, "max_retries": r.max_retries,
                             "resume_from": r.resume_from} for r in answer.retries],
            }
        payload = answers.pop(run_id, None)
        compared = {run: a for run, a in answers.items() if a["checkpoints"] or a["retries"]}
        primary_out = compared_out = None
        if payload is not None and payload != self.sent:
            primary_out = self.sent = payload
        if compared != self.compared_sent:
            compared_out = self.compared_sent = compared
        return primary_out, compared_out
