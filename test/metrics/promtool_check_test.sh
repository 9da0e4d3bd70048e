#!/usr/bin/env bash
# promtool_check_test.sh RENDER_SAMPLE: runs the metrics_render_sample binary (built by CMake, not
# here) and checks its output with `promtool check metrics` (format errors and lint problems both
# fail). Exit 77 (ctest: skipped) when promtool is not installed (Debian package `prometheus`).
set -euo pipefail
sample=${1:?usage: promtool_check_test.sh PATH/TO/metrics_render_sample}
promtool=${PROMTOOL:-$(command -v promtool || true)}
if [[ -z "$promtool" ]]; then
  echo "SKIP: promtool not found (apt-get install prometheus)" >&2
  exit 77
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$sample" >"$out"
if [[ ! -s "$out" ]]; then
  echo "FAIL: $sample printed nothing" >&2
  exit 1
fi
# promtool prints lint problems and exits non-zero on them; be strict about any output as well.
if ! report=$("$promtool" check metrics <"$out" 2>&1) || [[ -n "$report" ]]; then
  echo "FAIL: promtool check metrics:" >&2
  echo "$report" >&2
  echo "--- rendered exposition ---" >&2
  cat "$out" >&2
  exit 1
fi
echo "promtool check metrics: OK ($(grep -vc '^#' "$out") samples)"
