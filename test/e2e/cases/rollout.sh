# shellcheck shell=bash
# e2e case rollout (sourced by run.sh, which provides k, check, fail, until_true, new_ns,
# cleanup_ns, restart_engine, pods, all_running, $BASE, $E2E_DIR): a config that breaches its
# rollout watch is rolled back on a real tidal-engine beside the real control plane.
#
# The engine runs with queues default and team and rollout {watchSeconds: 120}. Its watched file
# ($BASE/engine.yaml) is then overwritten, as a GitOps sync would, with a config that drops queue
# default (a bad edit: the default queue's work can never run). Asserted: the engine activates it
# (its /config version changes); a pod of the default queue is rejected ("queue default is not
# configured"); within a few seconds the engine rolls back to the previous version (/config version
# back, reloads.rollbacks 1, drift 1: the file still holds the bad one; tidal_config_rollbacks_total
# 1; a config-rolled-back line would go to the decision log); the pod then binds and runs under the
# restored config. The times from the pod's creation to the rollback and to Running are printed.
# About 15 s.
MORE_CASES+=(rollout)

rollout_config() {  # rollout_config FIELD: a field of the engine's /config?format=json
  curl -sf "http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT/config?format=json" |
    python3 -c "import json,sys; d=json.load(sys.stdin); print(eval('d' + sys.argv[1]))" "$1"
}

rollout_metric() {  # rollout_metric NAME: the engine's value (0 if absent; awk reads it all: no SIGPIPE)
  curl -sf "http://127.0.0.1:$TIDAL_E2E_ENGINE_HTTP_PORT/metrics" | awk -v m="$1" '$1 == m {v = $2} END {print v + 0}'
}

case_rollout() {
  local ns=e2e-rollout cfg=$BASE/engine-rollout.yaml v0 v1 t0 rolled_ms run_ms
  new_ns $ns
  { cat "$E2E_DIR/config/engine.yaml"
    printf 'rollout: {watchSeconds: 120}\nqueues:\n  - {name: default}\n  - {name: team}\n'; } >"$cfg"
  restart_engine "$cfg" || { fail "engine restart with the rollout config failed"; return; }
  v0=$(rollout_config "['version']")
  # The GitOps sync writes a bad edit over the watched file: queue default is gone.
  { cat "$E2E_DIR/config/engine.yaml"
    printf 'rollout: {watchSeconds: 120}\nqueues:\n  - {name: team}\n'; } >"$BASE/engine.yaml"
  check "the engine activates the new config (version $v0 -> another)" \
    until_true 10 eval "[ \"\$(rollout_config \"['version']\")\" != '$v0' ]"
  v1=$(rollout_config "['version']")
  check "it is watched (watching true)" test "$(rollout_config "['watching']")" = True
  t0=$(e2e_now_ms)
  pods $ns p 1 1 tidal-scheduler '{}' | k create -f - >/dev/null
  check "the engine rolls back to version $v0 once the default queue's pod is rejected" \
    until_true 15 eval "[ \"\$(rollout_config \"['version']\")\" = '$v0' ]"
  rolled_ms=$(ms_since "$t0")
  check "reloads.rollbacks is 1" test "$(rollout_config "['reloads']['rollbacks']")" = 1
  check "drift: the file still holds the rolled-back version $v1" test "$(rollout_config "['drift']")" = True
  check "last_error says why" eval "[[ \"\$(rollout_config \"['last_error']\")\" == *'rolled back to $v0'* ]]"
  check "tidal_config_rollbacks_total 1" test "$(rollout_metric tidal_config_rollbacks_total)" = 1
  check "the default queue's pod runs under the restored config" until_true 20 all_running $ns 1
  run_ms=$(ms_since "$t0")
  timings+=("rollout-rolled-back=${rolled_ms}ms" "rollout-pod-running=${run_ms}ms")
  cleanup_ns $ns
  restart_engine "$E2E_DIR/config/engine.yaml"
}
