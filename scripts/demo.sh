#!/usr/bin/env bash
# The local demo: builds hawser (and HAProxy 3.0.11 when no HAProxy >= 3.0 is
# installed), then serves the built-in example on 127.0.0.1:8080 and :8443.
# Extra arguments go to `hawser demo` (see `hawser demo --help`).
set -euo pipefail
cd "$(dirname "$0")/.."

HAWSER_HAPROXY="$(scripts/install-haproxy.sh)"
export HAWSER_HAPROXY
exec cargo run --release --locked --quiet -p hawser -- demo "$@"
