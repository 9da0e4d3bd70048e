#!/usr/bin/env bash
# Builds the Go binaries the project needs, from pinned Go modules only (Go toolchain + module proxy):
#
#   build/tools/bin/etcd            go.etcd.io/etcd/server/v3        tools/etcd/go.mod
#   build/tools/bin/kube-apiserver  k8s.io/kubernetes/cmd/...        tools/k8s/go.mod  (all staging repos replaced)
#   build/tools/bin/kubectl         k8s.io/kubernetes/cmd/kubectl    tools/k8s/go.mod
#   build/tools/bin/kube-controller-manager  (same module; the demo runs Deployments/ReplicaSets/Jobs with it)
#   build/tools/bin/kwok            sigs.k8s.io/kwok/cmd/kwok        tools/kwok/go.mod
#   build/tools/bin/protoc-gen-go, protoc-gen-go-grpc   pinned `go install`s (hack/gen-go-proto.sh)
#   build/bin/tidal-scheduler, tidal-explain   kube-scheduler + Tidal plugin, Explain client
#                                   shim/kube/go.mod  (hack/build-shim.sh; generates shim/kube/gen first)
#
# Usage: hack/build-go-tools.sh [--force] [NAME...]   (NAME: etcd kube-apiserver kubectl kube-controller-manager
#        kwok protoc-gen-go tidal-scheduler; default: all). Idempotent: a tool binary newer than its module's
#        go.sum (and go.mod) is not rebuilt; tidal-scheduler is rebuilt when a non-test file under shim/kube (or
#        the proto) is newer than it. --force rebuilds anyway.
# Env:   GO_BUILD_JOBS (default 2: go build -p), TIDAL_TOOLS_BIN (default build/tools/bin),
#        TIDAL_BIN (default build/bin).
#
# Measured on the 2-core / 24 GiB Debian 12 dev machine, Go 1.26.8, -p 2 (a C++ build shared the cores):
#   fresh machine (empty module cache + GOCACHE; ~190 MB of module downloads): 7m38s in all, peak RSS 1.9 GB:
#     etcd 66 s, kube-apiserver 274 s, kubectl 27 s, kwok 70 s, tidal-scheduler 20 s (reuses the k8s packages)
#   kube-apiserver alone with modules present, empty GOCACHE: 3m43s
#   warm: nothing to do < 0.1 s; tidal-scheduler after a plugin edit 6-8 s; k8s relink after go.sum change 20 s
# Disk: ~1.1 GB module cache, ~3.3 GB GOCACHE. Details: test/e2e/README.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS_BIN=${TIDAL_TOOLS_BIN:-$ROOT/build/tools/bin}
BIN=${TIDAL_BIN:-$ROOT/build/bin}
JOBS=${GO_BUILD_JOBS:-2}

FORCE=0
WANT=()
for a in "$@"; do
  case $a in
    --force|-f) FORCE=1 ;;
    -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}"; exit 0 ;;
    etcd|kube-apiserver|kubectl|kube-controller-manager|kwok|protoc-gen-go|tidal-scheduler) WANT+=("$a") ;;
    *) echo "build-go-tools: unknown argument: $a" >&2; exit 2 ;;
  esac
done
[ ${#WANT[@]} -gt 0 ] || WANT=(etcd kube-apiserver kubectl kube-controller-manager kwok protoc-gen-go tidal-scheduler)

command -v go >/dev/null || { echo "build-go-tools: 'go' not found on PATH (need Go >= 1.26)" >&2; exit 1; }
mkdir -p "$TOOLS_BIN" "$BIN"

log() { printf '[build-go-tools] %s\n' "$*" >&2; }

# up_to_date OUT FILE...: OUT exists and is newer than every FILE.
up_to_date() {
  local out=$1; shift
  [ "$FORCE" = 0 ] && [ -x "$out" ] || return 1
  local f; for f in "$@"; do [ "$out" -nt "$f" ] || return 1; done
}

# gobuild NAME MODDIR PKG OUT [extra ldflags]: build PKG inside module MODDIR to OUT (atomically).
gobuild() {
  local name=$1 dir=$2 pkg=$3 out=$4 extra=${5:-}
  local t0=$SECONDS tmp="$out.tmp.$$"
  log "building $name ($pkg) ..."
  ( cd "$dir" && go build -p "$JOBS" -trimpath -buildvcs=false -ldflags="-s -w $extra" -o "$tmp" "$pkg" ) || { rm -f "$tmp"; return 1; }
  mv -f "$tmp" "$out"
  log "built $name in $((SECONDS - t0)) s -> ${out#"$ROOT"/}"
}

# k8s version stamp (kubectl version / kube-apiserver /version report it instead of v0.0.0-master).
k8s_ldflags() {
  local v; v=$(cd "$1" && go list -m -f '{{.Version}}' k8s.io/kubernetes)   # e.g. v1.36.3
  local mm=${v#v}; local major=${mm%%.*} rest=${mm#*.}; local minor=${rest%%.*}
  local p=k8s.io/component-base/version
  printf -- '-X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean -X %s.gitCommit=' \
    "$p" "$v" "$p" "$major" "$p" "$minor" "$p" "$p"
}

tool() {  # tool NAME MODDIR PKG
  local name=$1 dir=$ROOT/$2 pkg=$3 out=$TOOLS_BIN/$1 extra=""
  if up_to_date "$out" "$dir/go.sum" "$dir/go.mod"; then log "$name is up to date"; return 0; fi
  case $name in kube-apiserver|kubectl|kube-controller-manager) extra=$(k8s_ldflags "$dir") ;; esac
  gobuild "$name" "$dir" "$pkg" "$out" "$extra"
}

T0=$SECONDS
for w in "${WANT[@]}"; do
  case $w in
    etcd)            tool etcd           tools/etcd go.etcd.io/etcd/server/v3 ;;
    kube-apiserver)  tool kube-apiserver tools/k8s  k8s.io/kubernetes/cmd/kube-apiserver ;;
    kubectl)         tool kubectl        tools/k8s  k8s.io/kubernetes/cmd/kubectl ;;
    kube-controller-manager) tool kube-controller-manager tools/k8s k8s.io/kubernetes/cmd/kube-controller-manager ;;
    kwok)            tool kwok           tools/kwok sigs.k8s.io/kwok/cmd/kwok ;;
    protoc-gen-go)   FORCE=$FORCE TIDAL_TOOLS_BIN=$TOOLS_BIN "$ROOT/hack/gen-go-proto.sh" --tools-only ;;
    tidal-scheduler) GO_BUILD_JOBS=$JOBS TIDAL_BIN=$BIN TIDAL_TOOLS_BIN=$TOOLS_BIN FORCE=$FORCE "$ROOT/hack/build-shim.sh" ;;
  esac
done
log "done in $((SECONDS - T0)) s"
