#!/usr/bin/env bash
# Runs everything CI runs: formatting, lints, and every test tier (unit,
# snapshot, and end-to-end tests against a real HAProxy and real echo backends).
# Installs what the tests need first (HAProxy >= 3.0, built once and cached).
set -euo pipefail
cd "$(dirname "$0")/.."

HAWSER_HAPROXY="$(scripts/install-haproxy.sh)"
export HAWSER_HAPROXY

scripts/test-chart.sh   # the Helm chart: lint, render, Kubernetes schemas, its promises
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy (warnings denied)"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== tests"
if cargo nextest --version >/dev/null 2>&1; then
  # Doc tests first: nextest does not run them, and its summary should close the run.
  cargo test --workspace --locked --doc --quiet
  cargo nextest run --workspace --locked --no-fail-fast
else
  cargo test --workspace --locked --no-fail-fast
fi
