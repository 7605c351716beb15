#!/bin/sh
# Regenerates event_pb2.py from event.proto.
#
# protoc 25.x (grpcio-tools 1.62.x) is pinned on purpose: its Python gencode carries no
# runtime-version check, so the committed file loads on every protobuf runtime from 4.25
# through 7.x. Newer protoc stamps a minimum runtime into the gencode (5.26+, 6.x, ...),
# which would break `protobuf>=4.25`. grpcio-tools 1.62 also pins protobuf<5, so run it
# from a throwaway virtualenv, not the project's.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
venv=${PROTOC_VENV:-"${TMPDIR:-/tmp}/tau-protoc-venv"}
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "grpcio-tools==1.62.3"
fi
# The proto is compiled from the distribution root so it registers in protobuf's default pool as
# tau_collector/sources/tensorboard_proto/event.proto, a name no other library uses.
cd "$here/../../.."
"$venv/bin/python" -m grpc_tools.protoc --proto_path=. --python_out=. \
    tau_collector/sources/tensorboard_proto/event.proto
