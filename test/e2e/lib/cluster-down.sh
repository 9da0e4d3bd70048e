#!/usr/bin/env bash
# Stops everything cluster-up.sh (or a test) recorded in BASE/run/*.pid: SIGTERM, then SIGKILL after a
# grace period. Clients (e.g. tidal-scheduler, kwok) go first, then kube-apiserver, then etcd.
# A PID is only signalled while it still runs the binary that was started (no reused-PID accidents).
# Usage: cluster-down.sh BASE [--purge]   (--purge also deletes BASE). Safe to run twice.
set -euo pipefail
# shellcheck source=test/e2e/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

BASE=${1:?usage: cluster-down.sh BASE [--purge]}
[ -d "$BASE" ] || exit 0
BASE=$(cd "$BASE" && pwd)
rc=0
if [ -d "$BASE/run" ]; then
  # anything a test registered (schedulers, engines, ...) first, then the control plane in reverse order
  for f in "$BASE"/run/*.pid; do
    [ -e "$f" ] || continue
    n=$(basename "$f" .pid)
    case $n in kwok|kube-apiserver|etcd) ;; *) e2e_stop "$BASE" "$n" 10 || rc=1 ;; esac
  done
  e2e_stop "$BASE" kwok 10 || rc=1
  e2e_stop "$BASE" kube-apiserver 15 || rc=1
  e2e_stop "$BASE" etcd 10 || rc=1
fi
if [ "${2:-}" = --purge ]; then
  [ "$BASE" != / ] && rm -rf "${BASE:?}"
fi
exit $rc
