"""Encoded answers of identical reads, shared by the panes that ask them.

Hundreds of live panes polling one run ask the same tail many times a second; the answer depends only on
the request, the store's index (files are immutable, and the index names them) and the second its
``metadata`` block names. So an answer is kept for as long as all three hold: the store reader's
:meth:`~tau_collector.expstore.StoreReader.generation` token and the second are the cache's epoch (a new
one empties it), the route and its query the key. Only successful answers of a reader that has a
generation (the local store; not Kusto) are kept, each at most :data:`MAX_ANSWER_BYTES`, at most
:data:`MAX_ANSWERS` of them (the least recently asked goes first): memory is bounded whatever is asked.

Beside the encoded answers, :meth:`AnswerCache.computed` keeps what an expensive answer is made of (the parameter
importance of 10,000 runs: their values, configs and scores) under the reader's generation alone, so it outlives
the second but not a new point, run or config: at most :data:`MAX_COMPUTED` of them, small values only.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

from starlette.responses import Response

from .errors import SECURITY_HEADERS

__all__ = ["MAX_ANSWERS", "MAX_ANSWER_BYTES", "MAX_COMPUTED", "AnswerCache"]

MAX_ANSWERS = 256
MAX_ANSWER_BYTES = 256 * 1024
MAX_COMPUTED = 32
_T = TypeVar("_T")


class AnswerCache:
    """``get``/``put`` of encoded JSON answers under an epoch, ``computed`` values under a generation; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._epoch: tuple | None = None
        self._answers: OrderedDict[tuple, bytes] = OrderedDict()
        self._generation: object = None
        self._computed: OrderedDict[tuple, object] = OrderedDict()

    def computed(self, generation: object, key: tuple, build: Callable[[], _T]) -> _T:
        """The value ``build()`` made under ``generation`` for ``key``, built now when there is none (outside the
        lock: two requests at once may both build it). A new generation forgets every value; an exception is not
        kept. At most :data:`MAX_COMPUTED` values, the least recently asked going first."""
        with self._lock:
            if generation is self._generation and key in self._computed:
                self._computed.move_to_end(key)
                return self._computed[key]  # type: ignore[return-value]
        value = build()
        with self._lock:
            if generation is not self._generation:
                self._generation, self._computed = generation, OrderedDict()
            self._computed[key] = value
            while len(self._computed) > MAX_COMPUTED:
                self._computed.popitem(last=False)
        return value

    def get(self, epoch: tuple, key: tuple) -> Response | None:
        with self._lock:
            if epoch != self._epoch:
                return None
            body = self._answers.get(key)
            if body is None:
                return None
            self._answers.move_to_end(key)
        return Response(body, status_code=200, media_type="application/json", headers=SECURITY_HEADERS)

    def put(self, epoch: tuple, key: tuple, response: Response) -> Response:
        body = response.body
        if response.status_code != 200 or len(body) > MAX_ANSWER_BYTES:
            return response
        with self._lock:
            if epoch != self._epoch:
                self._epoch, self._answers = epoch, OrderedDict()
            self._answers[key] = bytes(body)
            if len(self._answers) > MAX_ANSWERS:  # the least recently asked goes
                self._answers.popitem(last=False)
        return response
