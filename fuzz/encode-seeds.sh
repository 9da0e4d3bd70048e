#!/usr/bin/env bash
# Encodes the rpc target's seeds (fuzz/seeds/rpc/*.txtpb, tidal.fuzz.Session as text) into
# fuzz/corpus/rpc/<name> (binary protobuf, what the target reads). Run after editing a seed.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p fuzz/corpus/rpc
for f in fuzz/seeds/rpc/*.txtpb; do
  protoc -I proto -I . --encode=tidal.fuzz.Session fuzz/rpc_session.proto <"$f" >"fuzz/corpus/rpc/$(basename "$f" .txtpb)"
done
