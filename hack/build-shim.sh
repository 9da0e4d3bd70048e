#!/usr/bin/env bash
# Builds the Go side of Tidal from shim/kube:
#   build/bin/tidal-scheduler   kube-scheduler (k8s.io/kubernetes, pinned in shim/kube/go.mod) + the Tidal plugin
#   build/bin/tidal-explain     tiny Explain client for tidal-engine
# First generates the Go code of proto/tidal/v1/engine.proto into shim/kube/gen (hack/gen-go-proto.sh;
# installs the pinned protoc-gen-go / protoc-gen-go-grpc into build/tools/bin when missing).
# Usage: hack/build-shim.sh [--force]. Rebuilds only when a non-test file under shim/kube (generated code
# included) or the proto is newer than the binaries.
# Env: GO_BUILD_JOBS (default 2), TIDAL_BIN (default build/bin), TIDAL_TOOLS_BIN (build/tools/bin),
#      FORCE=1 (same as --force).
# Cold: ~5 min alone on 2 cores (it compiles most of what kube-apiserver does); ~1.5 min after
# hack/build-go-tools.sh has built kube-apiserver (shared GOCACHE); 6-15 s after a plugin edit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${TIDAL_BIN:-$ROOT/build/bin}
JOBS=${GO_BUILD_JOBS:-2}
FORCE=${FORCE:-0}
[ "${1:-}" = --force ] && FORCE=1
MOD=$ROOT/shim/kube
OUT=$BIN/tidal-scheduler
EXPLAIN=$BIN/tidal-explain

log() { printf '[build-shim] %s\n' "$*" >&2; }
mkdir -p "$BIN"

FORCE=$FORCE "$ROOT/hack/gen-go-proto.sh"

stale() {  # stale BINARY: missing, or older than a non-test source file or the proto
  [ "$FORCE" = 1 ] || [ ! -x "$1" ] && return 0
  [ -n "$(find "$MOD" "$ROOT/proto" -type f ! -name '*_test.go' -newer "$1" -print -quit)" ]
}
if ! stale "$OUT" && ! stale "$EXPLAIN"; then
  log "tidal-scheduler and tidal-explain are up to date"; exit 0
fi

v=$(cd "$MOD" && go list -m -f '{{.Version}}' k8s.io/kubernetes)   # e.g. v1.36.3
mm=${v#v}; major=${mm%%.*}; rest=${mm#*.}; minor=${rest%%.*}
p=k8s.io/component-base/version
ldflags="-s -w -X $p.gitVersion=$v -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.gitCommit="

t0=$SECONDS
log "building tidal-scheduler (k8s.io/kubernetes $v) and tidal-explain ..."
tmp="$OUT.tmp.$$" tmpx="$EXPLAIN.tmp.$$"
( cd "$MOD" && go build -p "$JOBS" -trimpath -buildvcs=false -ldflags="$ldflags" -o "$tmp" ./cmd/tidal-scheduler \
    && go build -p "$JOBS" -trimpath -buildvcs=false -ldflags="-s -w" -o "$tmpx" ./cmd/tidal-explain ) \
  || { rm -f "$tmp" "$tmpx"; exit 1; }
mv -f "$tmp" "$OUT"
mv -f "$tmpx" "$EXPLAIN"
log "built tidal-scheduler and tidal-explain in $((SECONDS - t0)) s -> ${BIN#"$ROOT"/}"
