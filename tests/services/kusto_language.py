"""Microsoft's Kusto.Language (npm ``@kusto/language-service-next``) as a long-lived node process for the tests.

``kusto_language.js`` answers one JSON line per request. :class:`KustoLanguage` declares the database
the shipped assets create (table, materialized views with their inferred columns, functions) and
checks any KQL text against it: ADX's own parser and binder, with its KS-coded diagnostics and the
result schema it infers.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from .kusto_assets import Assets

__all__ = ["Check", "KustoLanguage", "KustoLanguageError"]

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "kusto_language.js"
PACKAGE = HERE / "node_modules" / "@kusto" / "language-service-next"


class KustoLanguageError(RuntimeError):
    """The service is missing, did not start, or answered with an error of its own."""


@dataclass(frozen=True)
class Check:
    kind: str
    diagnostics: list[dict]
    columns: list[tuple[str, str]]

    @property
    def errors(self) -> list[str]:
        return [f"{d['code']} @{d['start']}: {d['message']}" for d in self.diagnostics if d["severity"] == "Error"]


class KustoLanguage:
    def __init__(self, timeout_s: float = 120.0) -> None:
        node = shutil.which("node")
        if node is None or not PACKAGE.exists():
            raise KustoLanguageError(
                "Kusto.Language is not installed: run `npm ci --prefix tests/services` (needs node 20)"
            )
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._process = subprocess.Popen(
            [node, str(SCRIPT)], cwd=HERE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            stderr=subprocess.DEVNULL,
        )
        ready = self._read()
        if not ready.get("ready"):
            raise KustoLanguageError(f"Kusto.Language service did not start: {ready}")

    def _read(self) -> dict:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise KustoLanguageError(f"Kusto.Language service exited with code {self._process.poll()}")
        return json.loads(line)

    def _ask(self, request: dict) -> dict:
        with self._lock:
            assert self._process.stdin is not None
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
            answer = self._read()
        if not answer.get("ok"):
            raise KustoLanguageError(answer.get("error", str(answer)))
        return answer

    def declare(self, assets: Assets, database: str = "Metrics") -> dict[str, str]:
        """Declare what the assets create; returns each view's inferred column schema."""
        answer = self._ask({
            "op": "schema",
            "database": database,
            "tables": [{"name": assets.table, "schema": assets.table_schema}],
            "views": [{"name": v.name, "query": v.query} for v in assets.views],
            "functions": [{"name": f.name, "parameters": f.parameters, "body": f.body} for f in assets.functions],
        })
        return answer["views"]

    def check(self, text: str) -> Check:
        answer = self._ask({"op": "check", "text": text})
        return Check(answer["kind"], answer["diagnostics"], [tuple(c) for c in answer["columns"]])

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
