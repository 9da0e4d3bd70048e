#!/usr/bin/env bash
# Quick end-to-end smoke test: the "smoke" case of test/e2e/run.sh (real control plane, tidal-engine,
# tidal-scheduler; a 1-GPU pod binds and runs, a 9-GPU pod stays Unschedulable, a 2 s pod succeeds).
# Builds what is missing first (TIDAL_E2E_SKIP_BUILD=1 skips). Exit status non-zero on failure.
exec "$(dirname "${BASH_SOURCE[0]}")/run.sh" smoke
