"""A run's configuration by TauGrid's rules: normalized JSON, indexed fields, config_hash, and bad files.

The expected texts are what TauGrid's ``exp track --config`` computes (``portal/internal/cli/exp_track.go``:
Go's ``json.Unmarshal``/``yaml.v3`` decoding, ``json.Marshal``, ``flattenConfigFields``), worked out
from Go's rules by hand: a JSON number is a float64, a YAML plain scalar resolves by yaml.v3's table.
"""

from __future__ import annotations

import hashlib

import pytest

from tau_collector.taugrid.run_config import (
    MAX_CONFIG_BYTES,
    ConfigError,
    combined_config_hash,
    indexed_fields_json,
    read_config_file,
    run_config,
)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_a_json_config_is_normalized_as_go_marshals_it(tmp_path):
    path = tmp_path / "params.json"
    path.write_bytes(b'{"zeta": 1, "alpha": {"lr": 0.001, "name": "<a&b>"}, "big": 12345678901234567891, '
                     b'"tiny": 1e-7, "huge": 1e21, "one": 1.0, "list": [1, "x", true], "none": null, '
                     b'"u": "\\u2028"}')
    config = read_config_file(path)
    normalized = ('{"alpha":{"lr":0.001,"name":"\\u003ca\\u0026b\\u003e"},"big":12345678901234567000,'
                  '"huge":1e+21,"list":[1,"x",true],"none":null,"one":1,"tiny":1e-7,"u":"\\u2028","zeta":1}')
    assert config.normalized_json == normalized
    assert config.config_hash == _sha(normalized)
    assert (config.format, config.uri) == ("json", str(path))
    assert config.indexed_fields == ('{"alpha.lr":0.001,"alpha.name":"\\u003ca\\u0026b\\u003e",'
                                     '"big":12345678901234567000,"huge":1e+21,"list":[1,"x",true],"one":1,'
                                     '"tiny":1e-7,"u":"\\u2028","zeta":1}')
    assert config.values["alpha"] == {"lr": 0.001, "name": "<a&b>"}
    assert config.values["one"] == 1 and config.values["none"] is None
    assert config.fields == {"alpha.lr": 0.001, "alpha.name": "<a&b>", "big": 12345678901234567000, "huge": 1e21,
                             "list": '[1,"x",true]', "one": 1, "tiny": 1e-7, "u": "\u2028", "zeta": 1}


YAML = """\
lr: 1e-3
batch: 0x20
octal: 017
under: 1_000
half: .5
yes_flag: yes
on_flag: on
truth: True
nothing: ~
date: 2024-01-01
clock: 1:30
quoted: "42"
nested:
  opt: adam
  betas: [0.9, 0.999]
big: 18446744073709551615
bigger: 18446744073709551616
base: &b {depth: 2}
merged:
  <<: *b
  width: 3
1: one
2.5: two-and-a-half
1e6: mega
true: yes-key
"""


def test_a_yaml_config_resolves_scalars_as_yaml_v3_does(tmp_path):
    path = tmp_path / "config.yml"
    path.write_text(YAML)
    config = read_config_file(path)
    assert config.format == "yaml"
    assert config.normalized_json == (
        '{"1":"one","1e+06":"mega","2.5":"two-and-a-half","base":{"depth":2},"batch":32,"big":18446744073709551615,"bigger":18446744073709552000,'
        '"clock":"1:30","date":"2024-01-01","half":0.5,"lr":0.001,"merged":{"depth":2,"width":3},'
        '"nested":{"betas":[0.9,0.999],"opt":"adam"},"nothing":null,"octal":15,"on_flag":"on","quoted":"42",'
        '"true":"yes-key","truth":true,"under":1000,"yes_flag":"yes"}')
    # indexed fields decode the normalized JSON again: every number a float64 (so uint64 max rounds)
    assert config.indexed_fields == (
        '{"1":"one","1e+06":"mega","2.5":"two-and-a-half","base.depth":2,"batch":32,"big":18446744073709552000,"bigger":18446744073709552000,'
        '"clock":"1:30","date":"2024-01-01","half":0.5,"lr":0.001,"merged.depth":2,"merged.width":3,'
        '"nested.betas":[0.9,0.999],"nested.opt":"adam","octal":15,"on_flag":"on","quoted":"42","true":"yes-key",'
        '"truth":true,'
        '"under":1000,"yes_flag":"yes"}')
    assert config.values["big"] == 18446744073709551615
    assert config.fields["nested.betas"] == "[0.9,0.999]" and "nothing" not in config.fields


def test_wandb_shaped_values_are_indexed_by_their_value():
    config = run_config({"lr": {"desc": None, "value": 0.1}, "layers": {"desc": "depth", "value": [64, 64]}},
                        format="yaml", uri="config.yaml")
    # {"value": scalar} is read as the scalar; a list value is not a scalar, so it is walked as a map
    assert config.fields == {"lr": 0.1, "layers.desc": "depth", "layers.value": "[64,64]"}


def test_lists_of_more_than_eight_or_of_maps_are_not_indexed():
    config = run_config({"short": list(range(8)), "long": list(range(9)), "maps": [{"a": 1}]},
                        format="json", uri="x.json")
    assert config.fields == {"short": "[0,1,2,3,4,5,6,7]"}
    assert config.values["long"] == list(range(9))


def test_a_top_level_value_key_hides_every_field_as_taugrid_does():
    # flattenConfigFields reads a map holding a scalar "value" as that value, and drops it at the top level
    assert indexed_fields_json('{"lr":0.1,"value":3}') == ""
    assert run_config({"lr": 0.1, "value": 3}, format="json", uri="x.json").fields == {}


def test_combined_hash_of_several_configs_is_the_hash_of_the_sorted_hashes():
    assert combined_config_hash(["b" * 64]) == "b" * 64
    assert combined_config_hash(["b" * 64, "a" * 64]) == _sha("a" * 64 + "\n" + "b" * 64)


# -- bad input: a clear error naming the file and the place; nothing stored ---------------------------------


@pytest.mark.parametrize(("name", "content", "message"), [
    ("bad.json", b'{"lr": 0.1,\n "x": }', r"bad\.json: not valid JSON at line 2, column 7"),
    ("nan.json", b'{"lr": NaN}', r"nan\.json: not valid JSON: NaN is not JSON"),
    ("range.json", b'{"lr": 1e400}', r"range\.json: not valid JSON: number 1e400 is out of range"),
    ("list.json", b"[1, 2]", r"list\.json: a run configuration must be a mapping of names to values, not list"),
    ("empty.yaml", b"", r"empty\.yaml: a run configuration must be a mapping .* not null"),
    ("dup.yaml", b"a: 1\nb: 2\na: 3\n", r"dup\.yaml: line 3: mapping key 'a' already defined at line 1"),
    ("inf.yaml", b"lr: .inf\n", r"not finite"),
    ("syntax.yaml", b"a: [1, 2\nb: 3\n", r"syntax\.yaml: not valid YAML at line \d+, column \d+"),
    ("tag.yaml", b"a: !!python/object:os.system {}\n", r"tag\.yaml: line 1: YAML tag .* is not a plain value"),
    ("config.toml", b"a = 1\n", r"config\.toml: a 'raw' config is not read"),
])
def test_a_bad_config_file_is_refused_with_where(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ConfigError, match=message):
        read_config_file(path)


def test_yaml_aliases_cannot_multiply_a_config_past_the_budget(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 8)]
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r"laughs\.yaml: more than 100000 values"):
        read_config_file(path)


def test_deep_nesting_is_refused(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"a":' * 40 + "1" + "}" * 40)
    with pytest.raises(ConfigError, match=r"deep\.json: nested deeper than 32 levels"):
        read_config_file(path)


def test_a_file_larger_than_the_limit_is_refused_without_reading_it_all(tmp_path):
    path = tmp_path / "huge.json"
    with open(path, "wb") as fh:
        fh.write(b'{"x": "')
        fh.write(b"y" * (MAX_CONFIG_BYTES + 10))
        fh.write(b'"}')
    with pytest.raises(ConfigError, match=r"huge\.json: larger than 1048576 bytes"):
        read_config_file(path)
