"""Our run-config validator, identity and YAML writer give TauGrid's own answers on every case of the conformance table.

``taugrid_runconfig_cases.json`` holds, per case, the verdict of TauGrid's ``core/runconfig`` Go code (produced by
``taugrid_driver.go`` through ``regenerate.py``). The cases are rebuilt here from :mod:`cases` and must be the very
texts the table was made from (their SHA-256), so a change to the renderer or the writer asks for a regenerated
table instead of passing against stale answers.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from tau_collector.taugrid.config_limits import ConfigBudget
from tau_collector.taugrid.config_yaml import parse_yaml
from tau_collector.taugrid.direct_config import check_run_config
from tau_collector.taugrid.ids import MAX_ID_BYTES, InvalidID, id_from_title, id_problem, validate_id

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import all_cases, typed  # noqa: E402

TABLE = json.loads((HERE / "taugrid_runconfig_cases.json").read_text(encoding="utf-8"))
ROWS = {row["id"]: row for row in TABLE["cases"]}
CASES = {case["id"]: case for case in all_cases()}
SYNTAX = "<yaml syntax error>"


def test_the_table_is_the_one_these_cases_make():
    assert sorted(ROWS) == sorted(CASES), "cases were added or removed: run tests/conformance/regenerate.py"
    stale = [case_id for case_id, case in CASES.items()
             if hashlib.sha256(case["text"].encode("utf-8", "surrogatepass")).hexdigest() != ROWS[case_id]["text_sha256"]]
    assert not stale, f"these cases changed since the table was made (run regenerate.py): {stale[:5]}"
    assert len(ROWS) >= 300


def test_the_table_covers_every_kind_of_case():
    prefixes = {case_id.split("/")[0] for case_id in ROWS}
    assert {"rendered", "mutation", "typed", "document", "example", "yaml", "title", "id"} <= prefixes
    verdicts = [row["taugrid"] for row in ROWS.values() if row["kind"] == "config"]
    assert sum(v["accepted"] for v in verdicts) > 50 and sum(not v["accepted"] for v in verdicts) > 50


def _error_class(error: str) -> str:
    # YAML syntax errors are worded by each parser (libyaml in Go, PyYAML here): only the class is compared.
    if error.startswith("parse tau.yaml: yaml: ") and "unmarshal errors" not in error:
        return SYNTAX
    return error


def _ours(text: str) -> dict[str, Any]:
    verdict = check_run_config(text)
    out: dict[str, Any] = {"accepted": verdict.accepted}
    if verdict.stage:
        out["stage"] = verdict.stage
    if verdict.error:
        out["error"] = _error_class(verdict.error)
    if verdict.accepted:
        out["engine"] = verdict.engine
        out["identity"] = verdict.identity
    if verdict.warnings:
        out["warnings"] = list(verdict.warnings)
    return out


def _theirs(verdict: dict[str, Any]) -> dict[str, Any]:
    out = dict(verdict)
    if "error" in out:
        out["error"] = _error_class(out["error"])
    return out


def _ids(kind: str) -> list[str]:
    return [case_id for case_id, row in ROWS.items() if row["kind"] == kind]


@pytest.mark.parametrize("case_id", _ids("config"))
def test_our_verdict_on_a_config_is_taugrids(case_id):
    assert _ours(CASES[case_id]["text"]) == _theirs(ROWS[case_id]["taugrid"])


def _typed_key(value: Any) -> Any:
    # A float compares by its text, so NaN equals NaN and -0.0 differs from 0.0.
    if "float" in value:
        return ("float", repr(float(value["float"])))
    if "map" in value:
        return ("map", [(k, _typed_key(v)) for k, v in value["map"]])
    if "seq" in value:
        return ("seq", [_typed_key(v) for v in value["seq"]])
    ((kind, item),) = value.items()
    return (kind, item)


@pytest.mark.parametrize("case_id", _ids("yaml"))
def test_the_yaml_we_write_decodes_in_yaml_v3_to_exactly_the_values_meant(case_id):
    row = ROWS[case_id]
    verdict = row["taugrid"]
    assert verdict["accepted"], verdict.get("error")
    assert _typed_key(verdict["decoded"]) == _typed_key(row["value"])
    # and our own yaml.v3 reading of the same text agrees
    ours = parse_yaml(CASES[case_id]["text"].encode(), case_id, budget=ConfigBudget(case_id))
    assert _typed_key(typed(ours)) == _typed_key(row["value"])


@pytest.mark.parametrize("case_id", _ids("title"))
def test_the_experiment_id_from_a_title_is_taugrids(case_id):
    assert id_from_title(CASES[case_id]["text"]) == ROWS[case_id]["taugrid"]["derived"]


@pytest.mark.parametrize("case_id", _ids("id"))
def test_validate_id_is_taugrids(case_id):
    value = CASES[case_id]["text"]
    verdict = ROWS[case_id]["taugrid"]
    problem = id_problem("id", value)
    assert (problem is None) == verdict["accepted"]
    assert problem == verdict.get("error")
    # the ids every flag takes follow the same rule, within the longest id TauGrid's API serves in a path
    if len(value.encode("utf-8", "surrogatepass")) <= MAX_ID_BYTES:
        try:
            validate_id("id", value)
            ours = None
        except InvalidID as exc:
            ours = str(exc)
        assert ours == verdict.get("error")


def test_the_examples_taugrid_accepts_are_accepted_and_the_ones_it_refuses_are_refused():
    examples = {case_id: ROWS[case_id]["taugrid"]["accepted"] for case_id in ROWS if case_id.startswith("example/")}
    assert len(examples) >= 10
    assert sum(examples.values()) >= 10
    for case_id, accepted in examples.items():
        assert check_run_config(CASES[case_id]["text"]).accepted == accepted, case_id


def test_nan_is_not_lost_on_the_way():
    assert math.isnan(float(typed(math.nan)["float"]))
