# shellcheck shell=bash
# Sourced: pod generators for the e2e tests, the demo and bench-kube.
#
# e2e_pods NS PREFIX COUNT GPUS SCHEDULER [LABELS-JSON] [ANNOTATIONS-JSON] [NODESELECTOR-JSON]
#   prints a JSON List of COUNT pods PREFIX-0..PREFIX-(COUNT-1), each asking for GPUS nvidia.com/gpu,
#   E2E_POD_CPU (default 1) CPU and E2E_POD_MEMORY (default 1Gi) memory, spec.priority E2E_POD_PRIORITY
#   (unset: none; the test apiserver runs without the Priority admission plugin); feed it to `kubectl create -f -`.
e2e_pods() {
  local ns=$1 prefix=$2 n=$3 gpus=$4 sched=$5 labels=${6:-"{}"} ann=${7:-"{}"} sel=${8:-"{}"} i sep=""
  local cpu=${E2E_POD_CPU:-1} mem=${E2E_POD_MEMORY:-1Gi} res prio=""
  res="\"cpu\": \"$cpu\", \"memory\": \"$mem\""
  [ -z "${E2E_POD_PRIORITY:-}" ] || prio="\"priority\": $E2E_POD_PRIORITY, "
  [ "$gpus" = 0 ] || res+=", \"nvidia.com/gpu\": \"$gpus\""
  printf '{"apiVersion": "v1", "kind": "List", "items": ['
  for ((i = 0; i < n; i++)); do
    printf '%s\n{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "%s-%d", "namespace": "%s", "labels": %s, "annotations": %s},
 "spec": {%s"schedulerName": "%s", "nodeSelector": %s, "terminationGracePeriodSeconds": 0,
  "containers": [{"name": "main", "image": "fake.invalid/train:1", "resources": {"requests": {%s}, "limits": {%s}}}]}}' \
      "$sep" "$prefix" "$i" "$ns" "$labels" "$ann" "$prio" "$sched" "$sel" "$res" "$res"
    sep=,
  done
  printf ']}\n'
}

# e2e_gang NS NAME SIZE GPUS [EXTRA-LABELS-JSON-MEMBERS] [EXTRA-ANNOTATIONS-JSON-MEMBERS]
#   a Tidal gang: SIZE pods with label tidal.dev/gang=NAME and annotation tidal.dev/gang-size=SIZE;
#   the extras are JSON members without braces, e.g. '"tidal.dev/topology-required": "leaf"'.
e2e_gang() {
  local labels="{\"tidal.dev/gang\": \"$2\"${5:+, $5}}" ann="{\"tidal.dev/gang-size\": \"$3\"${6:+, $6}}"
  e2e_pods "$1" "$2" "$3" "$4" tidal-scheduler "$labels" "$ann"
}
