#!/usr/bin/env bash
# Builds the Go kube-scheduler shim (shim/kube: kube-scheduler + the Tidal plugin) into build/bin/tidal-scheduler.
# Usage: hack/build-shim.sh [--force]. Rebuilds only when a file under shim/kube is newer than the binary.
# Env: GO_BUILD_JOBS (default 2), TIDAL_BIN (default build/bin), FORCE=1 (same as --force).
# Cold: ~5 min alone on 2 cores (it compiles most of what kube-apiserver does); ~1.5 min after
# hack/build-go-tools.sh has built kube-apiserver (shared GOCACHE); ~15 s after a plugin edit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${TIDAL_BIN:-$ROOT/build/bin}
JOBS=${GO_BUILD_JOBS:-2}
FORCE=${FORCE:-0}
[ "${1:-}" = --force ] && FORCE=1
MOD=$ROOT/shim/kube
OUT=$BIN/tidal-scheduler

log() { printf '[build-shim] %s\n' "$*" >&2; }
mkdir -p "$BIN"

if [ "$FORCE" = 0 ] && [ -x "$OUT" ] && [ -z "$(find "$MOD" -type f ! -name '*_test.go' -newer "$OUT" -print -quit)" ]; then
  log "tidal-scheduler is up to date"; exit 0
fi

v=$(cd "$MOD" && go list -m -f '{{.Version}}' k8s.io/kubernetes)   # e.g. v1.36.3
mm=${v#v}; major=${mm%%.*}; rest=${mm#*.}; minor=${rest%%.*}
p=k8s.io/component-base/version
ldflags="-s -w -X $p.gitVersion=$v -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.gitCommit="

t0=$SECONDS
log "building tidal-scheduler (k8s.io/kubernetes $v) ..."
tmp="$OUT.tmp.$$"
( cd "$MOD" && go build -p "$JOBS" -trimpath -buildvcs=false -ldflags="$ldflags" -o "$tmp" ./cmd/tidal-scheduler ) || { rm -f "$tmp"; exit 1; }
mv -f "$tmp" "$OUT"
log "built tidal-scheduler in $((SECONDS - t0)) s -> ${OUT#"$ROOT"/}"
