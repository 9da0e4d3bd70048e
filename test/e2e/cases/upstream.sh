# shellcheck shell=bash
# Sourced by run.sh: the upstream gang API and the peers' keys.
#   podgroup         a scheduling.k8s.io/v1alpha2 Workload + PodGroup gang (minCount 16, topology
#                    key topology.tidal.dev/leaf): its pods, created before the PodGroup, wait (none
#                    bound); once the PodGroup exists all 16 run inside one leaf, bound by
#                    tidal-scheduler, and the PodGroup's PodGroupScheduled condition is True; a
#                    PodGroup that cannot be placed (5 x 8 GPUs in one NVLink domain of 4 nodes) gets
#                    PodGroupScheduled False / Unschedulable with the engine's reason, nothing bound
#   jobset-exclusive a JobSet-shaped group with alpha.jobset.sigs.k8s.io/exclusive-topology: the
#                    leader runs alone (no gang wait), followers created only once it is bound (as
#                    JobSet's webhook does; no nodeSelector on them) all land in the leader's leaf; a
#                    second child Job gets another leaf
# Uses run.sh's helpers (k, check, fail, until_true, bound, leaves, events, has_event, new_ns, cleanup_ns).

PG_API=podgroups.v1alpha2.scheduling.k8s.io

# pg_pods NS PREFIX COUNT GROUP: Tidal pods of 8 GPUs naming PodGroup GROUP (spec.schedulingGroup).
pg_pods() {
  e2e_pods "$1" "$2" "$3" 8 tidal-scheduler "{\"group\": \"$4\"}" |
    sed "s/\"spec\": {/\"spec\": {\"schedulingGroup\": {\"podGroupName\": \"$4\"}, /"
}

# pg_objects NS NAME MIN KEY: a Workload with one PodGroup template and the PodGroup made from it.
pg_objects() {
  cat <<YAML
apiVersion: scheduling.k8s.io/v1alpha2
kind: Workload
metadata: {name: $2, namespace: $1}
spec:
  podGroupTemplates:
  - name: workers
    schedulingPolicy: {gang: {minCount: $3}}
    schedulingConstraints: {topology: [{key: $4}]}
---
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: $2, namespace: $1}
spec:
  podGroupTemplateRef: {workload: {workloadName: $2, podGroupTemplateName: workers}}
  schedulingPolicy: {gang: {minCount: $3}}
  schedulingConstraints: {topology: [{key: $4}]}
YAML
}

pg_condition() {  # pg_condition NS NAME FIELD: a field of its PodGroupScheduled condition
  k get "$PG_API" -n "$1" "$2" -o jsonpath="{.status.conditions[?(@.type==\"PodGroupScheduled\")].$3}" 2>/dev/null
}
pg_condition_is() { [ "$(pg_condition "$1" "$2" "$3")" = "$4" ]; }

case_podgroup() {
  local ns=e2e-podgroup t0 l msg
  new_ns $ns
  # Discovery can fail for a moment under load (an engine restart, many namespaces going away just
  # before): ask again for up to 15 s before calling the API missing.
  pg_served() { k api-resources --api-group=scheduling.k8s.io -o name 2>/dev/null | grep -q '^podgroups'; }
  if ! until_true 15 pg_served; then
    fail "the apiserver does not serve scheduling.k8s.io/v1alpha2 podgroups (cluster-up.sh: --runtime-config, GenericWorkload)"
    return
  fi
  pg_pods $ns train 16 train | k create -f - >/dev/null
  check "the pods keep spec.schedulingGroup (GenericWorkload on in the apiserver)" \
    test "$(k get pod -n $ns train-0 -o jsonpath='{.spec.schedulingGroup.podGroupName}')" = train
  sleep 3
  check "without their PodGroup, none of the 16 pods is bound (3 s)" test "$(bound $ns group=train)" -eq 0
  t0=$(e2e_now_ms)
  pg_objects $ns train 16 topology.tidal.dev/leaf | k create -f - >/dev/null
  check "once the PodGroup exists, all 16 pods run" until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 16 group=train
  timings+=("podgroup16-running=$(ms_since "$t0")ms")
  l=$(leaves $ns group=train)
  check "inside one leaf, as schedulingConstraints.topology[0].key asks ($(echo "$l" | tr '\n' ' '))" \
    test "$(echo "$l" | grep -c .)" -eq 1
  check "bound by tidal-scheduler" until_true 10 reported_by $ns train-0 tidal-scheduler
  check "the PodGroup's PodGroupScheduled condition is True" until_true "$TIDAL_E2E_TIMEOUT" pg_condition_is $ns train status True
  e2e_log "    condition: $(pg_condition $ns train reason): $(pg_condition $ns train message)"
  timings+=("podgroup-condition=$(ms_since "$t0")ms")

  pg_objects $ns wide 5 topology.tidal.dev/nvlink | k create -f - >/dev/null
  pg_pods $ns wide 5 wide | k create -f - >/dev/null
  check "a PodGroup that cannot be placed gets PodGroupScheduled False / Unschedulable" \
    until_true "$TIDAL_E2E_TIMEOUT" pg_condition_is $ns wide reason Unschedulable
  msg=$(pg_condition $ns wide message)
  e2e_log "    condition: ${msg:0:200}"
  check "with the engine's reason (topology-required nvlink)" eval "grep -q 'nvlink' <<<\"\$msg\""
  check "and none of its pods is bound" test "$(bound $ns group=wide)" -eq 0
  k delete "$PG_API" -n $ns --all --wait=false >/dev/null 2>&1 || true
  k delete workloads.v1alpha2.scheduling.k8s.io -n $ns --all --wait=false >/dev/null 2>&1 || true
  cleanup_ns $ns
}

# js_pods NS NAME COUNT JOB-INDEX: pods of child Job JOB-INDEX of replicated job "rj" of JobSet "js",
# exclusive per leaf, labelled and annotated as JobSet's controller and webhook do.
js_pods() {
  local labels ann
  labels="{\"jobset.sigs.k8s.io/jobset-name\": \"js\", \"jobset.sigs.k8s.io/replicatedjob-name\": \"rj\", \"jobset.sigs.k8s.io/job-index\": \"$4\"}"
  ann="{\"alpha.jobset.sigs.k8s.io/exclusive-topology\": \"topology.tidal.dev/leaf\"}"
  e2e_pods "$1" "$2" "$3" 8 tidal-scheduler "$labels" "$ann"
}

case_jobset-exclusive() {
  local ns=e2e-jobset t0 l0 l1 job sel
  new_ns $ns
  for job in 0 1; do
    sel=jobset.sigs.k8s.io/job-index=$job
    t0=$(e2e_now_ms)
    js_pods $ns "js-rj-$job-leader" 1 $job | k create -f - >/dev/null
    check "job $job: the leader runs alone (no follower exists: a gang would wait forever)" \
      until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 1 "$sel"
    timings+=("jobset-leader$job-running=$(ms_since "$t0")ms")
    # JobSet's webhook admits followers only once the leader is bound.
    js_pods $ns "js-rj-$job-follower" 7 $job | k create -f - >/dev/null
    check "job $job: the 7 followers, created after the leader was bound, run" \
      until_true "$TIDAL_E2E_TIMEOUT" all_running $ns 8 "$sel"
    timings+=("jobset-job$job-running=$(ms_since "$t0")ms")
    l=$(leaves $ns "$sel")
    check "job $job: all 8 pods inside the leader's leaf ($(echo "$l" | tr '\n' ' '))" test "$(echo "$l" | grep -c .)" -eq 1
    if [ "$job" = 0 ]; then l0=$l; else l1=$l; fi
  done
  check "the two child Jobs have a leaf each (exclusive: $l0, $l1)" test "$l0" != "$l1"
  cleanup_ns $ns
}

MORE_CASES+=(podgroup jobset-exclusive)
