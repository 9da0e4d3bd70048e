#!/usr/bin/env bash
# deploy/slurm/tidal-slurm.service: systemd-analyze verify finds nothing to say about it (unknown
# keys, bad values), and every flag its ExecStart passes is one tidal-slurm --help lists.
# Usage: slurm_unit_test.sh ROOT TIDAL_SLURM       (exit 77 without systemd-analyze)
set -uo pipefail
ROOT=$1 B=$2
command -v systemd-analyze >/dev/null || { echo "skip: no systemd-analyze"; exit 77; }
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
unit=$ROOT/deploy/slurm/tidal-slurm.service
# The unit names the installed path; verify it against the built binary (verify checks it exists).
sed "s#^ExecStart=/usr/local/bin/tidal-slurm#ExecStart=$B#" "$unit" > "$D/tidal-slurm.service"
out=$(systemd-analyze verify "$D/tidal-slurm.service" 2>&1 | grep -v -e 'munge.service' -e 'slurmctld.service')
fail=0
if [ -n "$out" ]; then echo "FAIL: systemd-analyze verify:"; echo "$out"; fail=1; else echo "ok: systemd-analyze verify"; fi
usage=$("$B" --help)
for f in $(grep '^ExecStart=' "$unit" | grep -o -- '--[a-z-]*'); do
  if grep -q -- "$f " <<<"$usage"; then echo "ok: $f is a tidal-slurm flag"; else echo "FAIL: ExecStart passes $f, which tidal-slurm --help does not list"; fail=1; fi
done
grep -q '^RestartPreventExitStatus=2$' "$unit" || { echo "FAIL: exit 2 (a config error) would restart in a loop"; fail=1; }
exit $fail
