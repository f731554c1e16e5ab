#!/usr/bin/env bash
# Runs everything CI runs: formatting, lints, and every test tier (unit,
# snapshot, and end-to-end tests against a real HAProxy and real echo backends).
# Installs what the tests need first: HAProxy 3.0.11 and the newest 3.2, built
# once and cached, and libfaketime (Debian's faketime package), which the
# clock-step tests preload to step a running process's wall clock. Every test
# runs against 3.0.11; the tests that run HAProxy run a second time against
# 3.2. The upgrade-in-place test reloads a running HAProxy into the other
# binary: 3.0.11 to 3.2 in the first pass, back in the second.
set -euo pipefail
cd "$(dirname "$0")/.."

haproxy_30="$(scripts/install-haproxy.sh 3.0)"
haproxy_32="$(scripts/install-haproxy.sh 3.2)"
HAWSER_FAKETIME="$(scripts/install-faketime.sh)"
export HAWSER_FAKETIME
version() { "$1" -v | awk 'NR == 1 {print $3}'; }

# The tests that run HAProxy: the binary's end-to-end suite, the agent's, the
# HAProxy crate's, and the webhook's (its gate runs `haproxy -c` when it finds one).
HAPROXY_TESTS='package(hawser) | package(hawser-agent) | package(hawser-haproxy)
  | (package(hawser-controller) & test(/^webhook::/))'

export HAWSER_HAPROXY="$haproxy_30" HAWSER_HAPROXY_UPGRADE="$haproxy_32"
scripts/test-chart.sh   # the Helm chart: lint, render, Kubernetes schemas, its promises
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy (warnings denied)"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== tests"
# Both passes run whatever the first's outcome, so both summaries show; either
# failing fails the script.
failed=0
if ! cargo nextest --version >/dev/null 2>&1; then
  cargo test --workspace --locked --no-fail-fast || failed=1
  HAWSER_HAPROXY="$haproxy_32" HAWSER_HAPROXY_UPGRADE="$haproxy_30" \
    cargo test --workspace --locked --no-fail-fast -p hawser -p hawser-agent -p hawser-haproxy ||
    failed=1
  exit "$failed"
fi
# Doc tests first: nextest does not run them, and its summaries should close the run.
cargo test --workspace --locked --doc --quiet
echo "== every test, against HAProxy $(version "$haproxy_30")"
cargo nextest run --workspace --locked --no-fail-fast || failed=1
echo "== the tests that run HAProxy, against HAProxy $(version "$haproxy_32")"
HAWSER_HAPROXY="$haproxy_32" HAWSER_HAPROXY_UPGRADE="$haproxy_30" \
  cargo nextest run --workspace --locked --no-fail-fast -E "$HAPROXY_TESTS" || failed=1
exit "$failed"
