#!/bin/sh
# tidalctl sim end to end on traces as users bring them (docs/simulator.md, "Trace formats"):
# a spreadsheet export (byte order mark, CRLF, tab-separated, a non-ASCII team name), a window that
# leaves no job (the error says why), and a --config whose queues do not cover the trace (the
# rejections say why), outputs that cannot be written (refused before the replay), and a Slurm
# cluster's sacct history, and another tool's table read with --columns. Usage: inputs_test.sh TIDALCTL SOURCE_DIR WORK_DIR
# Threading: a plain script, one tidalctl at a time.
set -eu
T=$1
S=$2
D=$3/tidalctl_sim_inputs
rm -rf "$D" && mkdir -p "$D"
fail() { echo "FAIL: $*" >&2; exit 1; }

# A spreadsheet's tab-separated export, with its BOM and CRLF, not named .csv.
printf '\357\273\277id\tsubmit\tduration\tgpus\tqueue\r\na\t0\t00:10:00\t1\t\303\211quipe\r\nb\t5\t400d\t2\t\346\227\245\346\234\254\r\n' > "$D/export.tsv"
"$T" sim --trace "$D/export.tsv" --gpus 8 --policy fifo --on-bad-row fail > "$D/export.md" 2> "$D/export.err" ||
  fail "export.tsv refused: $(cat "$D/export.err")"
grep -q '^- jobs: 2$' "$D/export.md" || fail "export.tsv: not 2 jobs"
grep -q 'queue_names: .*quipe -> equipe' "$D/export.md" || fail "Équipe not kept as equipe: $(grep queue_names "$D/export.md")"
grep -q 'u65e5-u672c' "$D/export.md" || fail "日本 not kept"

# A window that leaves nothing: the error counts what was left out, instead of "no jobs".
if "$T" sim --trace "$S/test/sim/three_jobs.csv" --from 1h > /dev/null 2> "$D/window.err"; then fail "an empty window replayed"; fi
grep -q 'no jobs to replay in .*three_jobs.csv: 3 row(s) read, 3 outside the window \[1h, )' "$D/window.err" ||
  fail "empty window: $(cat "$D/window.err")"

# A config whose queues the trace does not use: tidal rejects every job and says why.
printf 'id,submit,duration,gpus,queue\na,0,10,1,vc1\nb,1,10,1,vc1\n' > "$D/vc.csv"
"$T" sim --trace "$D/vc.csv" --gpus 8 --policy fifo,tidal --config "$S/deploy/config/tidal.yaml" > "$D/vc.md" 2> "$D/vc.err" ||
  fail "vc.csv: $(cat "$D/vc.err")"
grep -q 'tidalctl sim: tidal: 2 job(s) rejected:' "$D/vc.err" || fail "no rejection count on stderr: $(cat "$D/vc.err")"
grep -q '2 x queue "vc1" is not configured' "$D/vc.err" || fail "no rejection reason on stderr: $(cat "$D/vc.err")"
grep -q '^| tidal | 2 | a | queue "vc1" is not configured' "$D/vc.md" || fail "no rejection table in the report"
# Outputs that cannot be written are refused before the replay (which may take minutes), by flag.
if "$T" sim --trace "$S/test/sim/three_jobs.csv" --out "$D/no/such/m.json" > /dev/null 2> "$D/out.err"; then fail "--out into a missing directory accepted"; fi
grep -q -- "--out $D/no/such/m.json: cannot write: its directory $D/no/such does not exist (checked before the replay)" "$D/out.err" ||
  fail "--out: $(cat "$D/out.err")"
if grep -q replaying "$D/out.err"; then fail "--out: replayed before refusing"; fi
if "$T" sim --trace "$S/test/sim/three_jobs.csv" --report "$D/vc.csv" > /dev/null 2> "$D/rep.err"; then fail "--report onto a file accepted"; fi
grep -q -- "--report $D/vc.csv: exists and is not a directory" "$D/rep.err" || fail "--report: $(cat "$D/rep.err")"
"$T" sim --trace "$S/test/sim/three_jobs.csv" --policy fifo --out "$D/m.json" > /dev/null 2>&1 || fail "--out to a new file refused"
[ -s "$D/m.json" ] || fail "--out not written"
# A Slurm cluster's sacct history (sacct -P, steps included): read by its header, the rows that are
# no job counted by why, and replayed through the Slurm door of the two-pool simulator too.
"$T" sim --trace "$S/test/sim/sacct/history.txt" --gpus 64 --policy easy-backfill,tidal > "$D/sacct.md" 2> "$D/sacct.err" ||
  fail "sacct history refused: $(cat "$D/sacct.err")"
grep -q '^- trace: .*history.txt (sacct)$' "$D/sacct.md" || fail "sacct: format not detected"
grep -q '^- jobs: 7$' "$D/sacct.md" || fail "sacct: not 7 jobs"
grep -q '^- skipped_rows: 2 job steps (sacct -X leaves them out), 1 never started, 1 no GPUs (CPU-only jobs), 1 not ended$' "$D/sacct.md" ||
  fail "sacct: skipped rows: $(grep skipped "$D/sacct.md")"
grep -q 'history.txt:14: Submit: invalid timestamp "yesterday"' "$D/sacct.err" || fail "sacct: bad Submit not named: $(cat "$D/sacct.err")"
"$T" sim --trace "$S/test/sim/three_jobs.csv" --slurm-trace "$S/test/sim/sacct/history.txt" --gpus 64 --policy tidal > "$D/pools.md" 2> "$D/pools.err" ||
  fail "sacct as --slurm-trace: $(cat "$D/pools.err")"
grep -q 'rows of .*history.txt that are no job to replay: 2 job steps' "$D/pools.err" || fail "sacct as --slurm-trace: $(cat "$D/pools.err")"
# Another tool's table (its own column names, timestamps, columns not read): --columns.
printf 'job_id,user,gpu_num,state,submit_time,duration,vc\nj1,alice,16,COMPLETED,2020-04-01 00:10:00,3600,VC_A\nj2,bob,1,FAILED,2020-04-01 00:00:00,60,vc_b\n' > "$D/helios.csv"
"$T" sim --trace "$D/helios.csv" --columns id=job_id,gpus=gpu_num,submit=submit_time,queue=vc --gpus 64 --policy fifo --on-bad-row fail \
  > "$D/helios.md" 2> "$D/helios.err" || fail "helios.csv refused: $(cat "$D/helios.err")"
grep -q '^- jobs: 2$' "$D/helios.md" || fail "helios.csv: not 2 jobs"
grep -q '^- ignored_columns: user, state$' "$D/helios.md" || fail "helios.csv: ignored columns: $(grep ignored "$D/helios.md")"
grep -q '^- trace_start: 2020-04-01 00:00:00$' "$D/helios.md" || fail "helios.csv: timestamps not rebased"
if "$T" sim --trace "$D/helios.csv" --columns gpu=gpu_num > /dev/null 2> "$D/cols.err"; then fail "--columns gpu= accepted"; fi
grep -q -- '--columns gpu=gpu_num: "gpu" is not a csv column' "$D/cols.err" || fail "--columns: $(cat "$D/cols.err")"
echo "ok"
