#!/usr/bin/env bash
# config-ci.sh: the checks a pull request to the config repo runs before it may merge
# (docs/gitops.md). Usage: config-ci.sh NEW.yaml [--engine URL] [--snapshot FILE] [--fail-on SPEC]
#   1. validate: tidalctl config validate NEW.yaml (exit 2 on an invalid file);
#   2. dry-run: with --snapshot (e.g. the latest `tidalctl snapshot` of the cluster),
#      tidalctl sim --snapshot FILE --config NEW.yaml --fail-on SPEC (exit 1 on a breach);
#   3. drift: with --engine, tidalctl config diff NEW.yaml --engine URL shows what would change in
#      the live engine (informational: a PR is expected to differ).
# TIDALCTL names the binary (default: tidalctl on PATH, else build/bin/tidalctl).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 NEW.yaml [--engine URL] [--snapshot FILE] [--fail-on SPEC]" >&2; exit 2; }
new=$1; shift
engine="" snapshot="" fail_on="preempt-nonpreemptible"
while [ $# -gt 0 ]; do
  case $1 in
    --engine) engine=$2; shift 2 ;;
    --snapshot) snapshot=$2; shift 2 ;;
    --fail-on) fail_on=$2; shift 2 ;;
    *) echo "$0: unknown flag $1" >&2; exit 2 ;;
  esac
done
tidalctl=${TIDALCTL:-$(command -v tidalctl || echo "$(dirname "$0")/../../build/bin/tidalctl")}
echo "== validate $new"
"$tidalctl" config validate "$new" || exit 2
if [ -n "$snapshot" ]; then
  echo "== dry-run on $snapshot (--fail-on $fail_on)"
  "$tidalctl" sim --snapshot "$snapshot" --config "$new" --fail-on "$fail_on"
fi
if [ -n "$engine" ]; then
  echo "== what changes in the live engine ($engine)"
  rc=0
  "$tidalctl" config diff "$new" --engine "$engine" || rc=$?
  [ "$rc" -le 1 ] || exit 2   # 1 = the PR changes something: expected
fi
echo "config-ci: $new passed"
