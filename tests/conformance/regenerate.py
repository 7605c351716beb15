"""Rebuild ``taugrid_runconfig_cases.json``: every case of :mod:`cases` with the verdict of TauGrid's own Go code.

Needs a Go toolchain and a GOPATH holding TauGrid's run-config packages and what they import, built in GOPATH mode
(no module proxy)::

    $GOPATH/src/github.com/Azure/taugrid/core/{runconfig,experiment,exptelemetry,envspec,fileutil,workloadmeta}
    gopkg.in/yaml.v3, github.com/docker/distribution/reference (Debian: golang-gopkg-yaml.v3-dev,
    golang-github-docker-distribution-dev, under /usr/share/gocode)

The driver uses ``runconfig`` (``config.go``; ``schema.go``'s field-path walk and ``unknown.go``'s key walk, which
the managed-manifest warnings need; ``discover.go``'s ``ExperimentRunMetadata``), ``exptelemetry.ValidateID``,
``experiment`` (``KubernetesLabelValue``, ``IDFromTitle``, ``HashJSON``), ``envspec`` and ``fileutil``; the
documentation catalog of ``schema.go`` and the did-you-mean text of the warnings play no part in a verdict.
TauGrid imports ``github.com/distribution/reference``; Debian ships the same API as
``github.com/docker/distribution/reference``, so a scratch copy of ``core/runconfig/config.go`` imports that.
TauGrid's code stays outside this repository; what is kept is our driver (``taugrid_driver.go``) and the table.

    python tests/conformance/regenerate.py --gopath DIR[:DIR...] [--go go] [--taugrid-commit SHA ...]

The table records, per case, its id, kind, text (left out past 4096 characters; ``text_sha256`` always), the
intended value of a ``yaml`` case, and TauGrid's verdict.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1] / "collector"), str(HERE.parents[1])]

from cases import all_cases  # noqa: E402

TABLE = HERE / "taugrid_runconfig_cases.json"
MAX_INLINE_TEXT = 4096


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def build_driver(go: str, gopath: str, work: Path) -> Path:
    first = Path(gopath.split(os.pathsep)[0])
    package = first / "src" / "taugridconformancedriver"
    package.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(HERE / "taugrid_driver.go", package / "main.go")
    binary = work / "taugrid_driver"
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": gopath, "GOFLAGS": "", "GOTOOLCHAIN": "local"}
    subprocess.run([go, "build", "-o", str(binary), "taugridconformancedriver"], check=True, env=env)
    return binary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gopath", required=True, help="GOPATH with TauGrid's core packages and their imports")
    parser.add_argument("--go", default="go", help="the go binary (default: go on PATH)")
    parser.add_argument("--taugrid-commit", action="append", default=[], metavar="FILE=SHA",
                        help="record which stored TauGrid version each file was read at (repeatable)")
    parser.add_argument("--out", type=Path, default=TABLE)
    args = parser.parse_args(argv)
    cases = all_cases()
    with tempfile.TemporaryDirectory() as tmp:
        driver = build_driver(args.go, args.gopath, Path(tmp))
        request = [{"id": c["id"], "kind": c["kind"], "text": c["text"]} for c in cases]
        done = subprocess.run([str(driver)], input=json.dumps(request), capture_output=True, text=True, check=True)
    verdicts = json.loads(done.stdout)
    version = subprocess.run([args.go, "version"], capture_output=True, text=True, check=True).stdout.strip()
    rows = []
    for case in cases:
        row = {"id": case["id"], "kind": case["kind"], "text_sha256": text_sha256(case["text"])}
        if len(case["text"]) <= MAX_INLINE_TEXT:
            row["text"] = case["text"]
        if "value" in case:
            row["value"] = case["value"]
        row["taugrid"] = verdicts[case["id"]]
        rows.append(row)
    table = {
        "about": "TauGrid's verdict on each case, produced by TauGrid's core/runconfig Go code through "
                 "tests/conformance/taugrid_driver.go; rebuild with tests/conformance/regenerate.py",
        "taugrid": {"repository": "Azure/taugrid", "files": dict(item.split("=", 1) for item in args.taugrid_commit),
                    "go": version},
        "cases": rows,
    }
    args.out.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(rows)} cases written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
