#!/usr/bin/env bash
# tidalctl config validate and tidalctl place on bad input files (admin exploration regressions):
# every problem printed (across and within sections), one YAML document per file, whole GPUs,
# gpus vs nvidia.com/gpu, "too large", plugin weight 0, a directory, YAML merge keys, --profile
# errors with the real file:line (a bare profile or an engine config), cluster-file node errors.
#   tidalctl_input_files_test.sh BUILD_DIR
set -euo pipefail
BUILD=${1:?usage: tidalctl_input_files_test.sh BUILD_DIR}
CTL=$(cd "$BUILD" && pwd)/bin/tidalctl
SRC=$(cd "$(dirname "$0")/../.." && pwd)
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() { set +e; (cd "$D" && "$CTL" "$@") >"$D/out" 2>&1; local rc=$?; set -e; OUT=$(cat "$D/out"); return $rc; }
expect() {  # expect RC PATTERN ARGS...
  local want=$1 pattern=$2 rc=0; shift 2
  run "$@" || rc=$?
  [ "$rc" = "$want" ] || fail "tidalctl $*: exit $rc, want $want: $OUT"
  grep -qF -- "$pattern" <<<"$OUT" || fail "tidalctl $*: no '$pattern' in: $OUT"
}
put() { printf "$2" > "$D/$1"; }

# config validate: every problem, across sections and within one.
put m1.yaml 'permitTimeoutSeconds: -1\nplanTtlSeconds: 0\n'
expect 1 'm1.yaml:2: planTtlSeconds: must be 1..86400, got 0' config validate m1.yaml
expect 1 '2 problem(s) in m1.yaml' config validate m1.yaml
put m2.yaml 'profile:\n  plugins: [fairshare, quotaa]\nqueues:\n  - name: a\n    weight: -1\n'
expect 1 'm2.yaml:2: profile default: plugins[1] (quotaa): unknown plugin' config validate m2.yaml
expect 1 'm2.yaml:5: queues[0].weight: must be a finite number > 0' config validate m2.yaml
put m3.yaml 'profile:\n  backfill: {depth: -2, minGpus: -1}\npools:\n  slurm: {keep: -1, idleSeconds: -5, graceCapSeconds: 99999999, to: everyone}\n'
expect 1 '6 problem(s) in m3.yaml' config validate m3.yaml
# One document; whole GPUs; too large; weight 0; a directory; merge keys.
put multi.yaml 'queues:\n  - name: a\n---\nqueues:\n  - name: b\n'
expect 1 'multi.yaml:3: more than one YAML document' config validate multi.yaml
put frac.yaml 'queues:\n  - name: a\n    nominal: {gpus: 0.5}\n'
expect 1 'frac.yaml:3: queues[0].nominal.gpus: 0.5 is not a whole number of GPUs' config validate frac.yaml
put big.yaml 'queues:\n  - name: a\n    nominal: {gpus: 99999999999999999999}\n'
expect 1 'big.yaml:3: queues[0].nominal.gpus: invalid quantity "1e+20": too large' config validate big.yaml
put pw0.yaml 'profile:\n  plugins: [fairshare, quota, gang, {name: topology, weight: 0}]\n'
expect 1 'pw0.yaml:2: profile.plugins[3].weight: must be 1..100, got 0' config validate pw0.yaml
expect 1 "$D: is a directory, not a file" config validate "$D"
put merge.yaml 'queues:\n  - &q\n    name: a\n    weight: 2\n  - <<: *q\n    name: b\n'
expect 0 'merge.yaml: valid (2 queues' config validate merge.yaml

# place: fabric and workload files.
put t.yaml 'levels: [leaf]\nfabric: {leaf: 1, node: 1, capacity: {gpus: 8}}\n'
put w.yaml 'workloads:\n  - {name: w, request: {gpus: 0.5}}\n'
expect 1 'w.yaml:2: workloads[0].request.gpus: 0.5 is not a whole number of GPUs' place --topology t.yaml --workloads w.yaml
put alias.yaml 'workloads:\n  - {name: a, request: {gpus: 8, nvidia.com/gpu: 1}}\n'
expect 1 'alias.yaml:2: workloads[0].request.nvidia.com/gpu: 1 differs from gpus (8)' place --topology t.yaml --workloads alias.yaml
put w1.yaml 'workloads:\n  - {name: w, request: {gpus: 1}}\n'
put ov.yaml 'levels: [leaf]\nfabric: {leaf: 1, node: 1, capacity: {gpus: 8}}\noverrides:\n  - {node: node-0, allocated: {gpus: 2}}\n  - {node: node-0, allocated: {gpus: 6}}\n'
expect 1 'ov.yaml:5: overrides[1].node: node node-0 is overridden already by overrides[0]' place --topology ov.yaml --workloads w1.yaml
put dup.yaml 'levels: [leaf]\nnodes:\n  - {name: a1, labels: {topology.tidal.dev/leaf: l0}, capacity: {gpus: 8}}\n  - {name: a1, labels: {topology.tidal.dev/leaf: l1}, capacity: {gpus: 8}}\n'
expect 1 'dup.yaml:4: nodes[1].name: duplicate node "a1" (first at nodes[0])' place --topology dup.yaml --workloads w1.yaml
put nolabel.yaml 'levels: [leaf]\nnodes:\n  - {name: a, capacity: {gpus: 8}}\n'
expect 1 'nolabel.yaml:3: nodes[0].labels: node a has no label topology.tidal.dev/leaf' place --topology nolabel.yaml --workloads w1.yaml

# place --profile: the real line, no leading dot, the file named; an engine config is accepted.
put p1.yaml 'name: p\nplugins: [priority, gang]\nbogus: 1\n'
expect 1 'p1.yaml:3: bogus: unknown field' place --profile p1.yaml
put p2.yaml 'name: p\nplugins:\n  - priority\n  - gang\n  - quotaa\n'
expect 1 'p2.yaml:5: profile p: plugins[2] (quotaa): unknown plugin' place --profile p2.yaml
put p3.yaml 'name: p\nbackfill:\n  depth: 1\n  dpeth: 2\n'
expect 1 'p3.yaml:4: backfill.dpeth: unknown field' place --profile p3.yaml
put engine.yaml 'permitTimeoutSeconds: 30\nprofile:\n  name: from-engine\n  plugins: [priority, gang, topology]\n'
expect 0 '(profile from-engine: priority, gang, topology)' place --profile engine.yaml
expect 0 '(profile default: fairshare, quota, gang, topology, preemption)' place --profile "$SRC/deploy/config/tidal.yaml"
put engine2.yaml 'queues: []\nprofile:\n  plugins: [priority, quotaa]\n'
expect 1 'engine2.yaml:3: profile default: plugins[1] (quotaa): unknown plugin' place --profile engine2.yaml
echo PASS
