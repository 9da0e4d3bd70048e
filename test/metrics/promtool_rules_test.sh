#!/usr/bin/env bash
# promtool_rules_test.sh: `promtool check rules` on deploy/prometheus/tidal-rules.yaml, then
# `promtool test rules` on its unit tests (tidal-rules.test.yaml). Exit 77 (ctest: skipped) when
# promtool is not installed (Debian package `prometheus`).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rules_dir=$(cd "$here/../../deploy/prometheus" && pwd)
promtool=${PROMTOOL:-$(command -v promtool || true)}
if [[ -z "$promtool" ]]; then
  echo "SKIP: promtool not found (apt-get install prometheus)" >&2
  exit 77
fi
cd "$rules_dir"  # rule_files in the test file are relative to it
"$promtool" check rules tidal-rules.yaml
"$promtool" test rules tidal-rules.test.yaml
