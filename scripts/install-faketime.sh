#!/usr/bin/env bash
# Finds libfaketime for hawser's clock-step tests, or installs Debian's
# `faketime` package, which provides it. The tests preload it into running
# hawser processes to step their wall clock (docs/certificates.md, "Clock steps").
#
#   export HAWSER_FAKETIME="$(scripts/install-faketime.sh)"
#
# Order: $HAWSER_FAKETIME when it is a file, then the library Debian installs
# for this machine's architecture, then `apt-get install faketime` (needs root,
# or sudo). Prints the library's absolute path on stdout; progress goes to stderr.
set -euo pipefail

log() { printf 'install-faketime: %s\n' "$*" >&2; }

if [[ -n ${HAWSER_FAKETIME:-} && -f $HAWSER_FAKETIME ]]; then
  printf '%s\n' "$HAWSER_FAKETIME"
  exit 0
fi

multiarch=$(gcc -print-multiarch 2>/dev/null || dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null ||
  printf '%s-linux-gnu' "$(uname -m)")
library="/usr/lib/$multiarch/faketime/libfaketime.so.1"

if [[ ! -f $library ]]; then
  command -v apt-get >/dev/null || { log "no apt-get: install libfaketime and set HAWSER_FAKETIME"; exit 1; }
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  log "installing Debian's faketime package"
  $sudo apt-get update -qq >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends faketime >&2
fi
[[ -f $library ]] || { log "faketime is installed but $library is missing"; exit 1; }
printf '%s\n' "$library"
