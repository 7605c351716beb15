"""TauGrid's identifier rule and the ids we derive from names and paths."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tau_collector.taugrid.ids import MAX_ID_BYTES, InvalidID, derive_id, is_valid_id, unreachable_id, validate_id


@pytest.mark.parametrize("good", ["a", "0", "seed-1", "lr.0_1", "a" * MAX_ID_BYTES])
def test_valid_ids_pass_unchanged_up_to_the_apis_path_limit(good):
    assert validate_id("run", good) == good
    assert unreachable_id("run", good) is None


@pytest.mark.parametrize("size", [MAX_ID_BYTES + 1, 5000])
def test_an_id_longer_than_the_api_serves_is_refused_by_both_rules(size):
    message = (f'run "{"a" * 40}..." is invalid ({size} bytes; at most 512, the longest id TauGrid\'s v2 API '
               "serves in a path)")
    with pytest.raises(InvalidID) as raised:
        validate_id("run", "a" * size)
    assert str(raised.value) == message
    assert unreachable_id("run", "a" * size) == message
    assert unreachable_id("run", "é" * 257) is not None  # bytes, not characters (514 bytes)


@pytest.mark.parametrize(("bad", "message"), [
    ("", "run is required"),
    ("A", 'run "A" is invalid (use lowercase alphanumerics with internal \'-\', \'_\' or \'.\')'),
    ("a b", 'run "a b" is invalid (use lowercase alphanumerics with internal \'-\', \'_\' or \'.\')'),
    ("..", 'run ".." is invalid (must start and end with an alphanumeric)'),
    ("a/b", 'run "a/b" is invalid (use lowercase alphanumerics with internal \'-\', \'_\' or \'.\')'),
    ("pct%61x", 'run "pct%61x" is invalid (use lowercase alphanumerics with internal \'-\', \'_\' or \'.\')'),
    ("<b>", 'run "<b>" is invalid (use lowercase alphanumerics with internal \'-\', \'_\' or \'.\')'),
])
def test_invalid_ids_get_taugrids_message(bad, message):
    with pytest.raises(InvalidID) as raised:
        validate_id("run", bad)
    assert str(raised.value) == message


@pytest.mark.parametrize(("text", "derived"), [
    ("Exp 1/Train", "exp-1-train"),
    ("__x__", "x"),
    ("///", "run"),
    ("trial_0001_lr=0.1", "trial_0001_lr-0.1"),
    ("Lösung", "l-sung"),
])
def test_derived_ids_follow_the_documented_rule(text, derived):
    assert derive_id(text) == derived


@given(st.text(max_size=200))
def test_every_derived_id_is_valid_and_deriving_again_changes_nothing(text):
    derived = derive_id(text)
    assert is_valid_id(derived)
    assert derive_id(derived) == derived
