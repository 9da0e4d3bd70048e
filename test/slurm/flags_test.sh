#!/usr/bin/env bash
# tidal-slurm's command line, before it reaches Slurm or the engine: --help prints the usage (exit 0);
# an unknown flag, a stray argument or a bad --once value exits 2 naming it, with the usage.
# Usage: flags_test.sh TIDAL_SLURM
set -uo pipefail
B=$1
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
out=$("$B" --help 2>&1); rc=$?
check "--help exits 0" '[ $rc -eq 0 ]'
for f in --config --engine --slurm-conf --metrics --holder --once --state; do
  check "--help names $f" 'grep -q -- "$f " <<<"$out"'
done
out=$("$B" --no-such-flag 2>&1); rc=$?
check "an unknown flag exits 2 with the usage" '[ $rc -eq 2 ] && grep -q "unknown flag --no-such-flag" <<<"$out" && grep -q "^usage: tidal-slurm" <<<"$out"'
out=$("$B" extra 2>&1); rc=$?
check "a stray argument exits 2 naming it" '[ $rc -eq 2 ] && grep -q "unexpected argument extra" <<<"$out"'
out=$("$B" --once yes 2>&1); rc=$?
check "--once yes exits 2 naming --once" '[ $rc -eq 2 ] && grep -q -- "--once: yes is not 1, 0, true or false" <<<"$out"'
exit $fail
