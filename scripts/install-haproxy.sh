#!/usr/bin/env bash
# Finds an HAProxy >= 3.0 for hawser's tests and local runs, or builds 3.0.11 from
# Debian's source package into a cache outside the repository.
#
# Order: $HAWSER_HAPROXY, then `haproxy` on PATH, then the cache, then a build.
# Prints the binary's absolute path on stdout (all progress goes to stderr), so
#   export HAWSER_HAPROXY="$(scripts/install-haproxy.sh)"
# is all a caller needs. Building needs root (apt-get) and about a minute on two cores.
set -euo pipefail

version=3.0.11
cache_root="${HAWSER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hawser}"
cached="$cache_root/haproxy-$version/haproxy"

log() { printf 'install-haproxy: %s\n' "$*" >&2; }

# True when $1 runs and reports a version >= 3.0.
recent_enough() {
  local bin=$1 line major minor
  line=$("$bin" -v 2>/dev/null | head -n 1) || return 1
  [[ $line =~ version\ ([0-9]+)\.([0-9]+) ]] || return 1
  major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]}
  (( major > 3 || (major == 3 && minor >= 0) ))
}

found() { log "using $1 ($("$1" -v | head -n 1))"; printf '%s\n' "$1"; exit 0; }

if [[ -n ${HAWSER_HAPROXY:-} ]]; then
  recent_enough "$HAWSER_HAPROXY" && found "$HAWSER_HAPROXY"
  log "HAWSER_HAPROXY=$HAWSER_HAPROXY is not an HAProxy >= 3.0; looking elsewhere"
fi
if on_path=$(command -v haproxy 2>/dev/null) && recent_enough "$on_path"; then
  found "$on_path"
fi
if [[ -x $cached ]] && recent_enough "$cached"; then
  found "$cached"
fi

# One build at a time: parallel test runs wait here for the first to finish.
mkdir -p "$cache_root"
exec 9>"$cache_root/.install.lock"
flock 9
if [[ -x $cached ]] && recent_enough "$cached"; then
  found "$cached"
fi

log "no HAProxy >= 3.0 found; building $version from Debian's source package"
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"

# The URI of the machine's own Debian archive, reused for a trixie deb-src entry.
debian_uri() {
  local f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] || continue
    uri=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' "$f")
    [[ -n $uri ]] && { printf '%s\n' "$uri"; return; }
  done
  awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) {print $i; exit}}' \
    /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | head -n 1
}
uri=$(debian_uri)
[[ -n $uri ]] || { log "cannot find the machine's Debian archive in the apt sources"; exit 1; }

src_list=/etc/apt/sources.list.d/hawser-trixie-src.sources
if [[ ! -f $src_list ]]; then
  printf 'Types: deb-src\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$uri" | $sudo tee "$src_list" >/dev/null
fi
$sudo apt-get update -qq >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  build-essential dpkg-dev libssl-dev libpcre2-dev liblua5.4-dev >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get source --download-only --tar-only "haproxy=$version-*" >&2 ||
  apt-get source --download-only --tar-only haproxy/trixie >&2)
tarball=$(ls "$work"/haproxy_"$version".orig.tar.* 2>/dev/null | head -n 1)
[[ -n $tarball ]] || { log "Debian's source did not provide haproxy_$version.orig.tar.*"; ls "$work" >&2; exit 1; }

mkdir -p "$work/src"
tar -xf "$tarball" -C "$work/src" --strip-components=1
make -C "$work/src" -j"$(nproc)" TARGET=linux-glibc USE_OPENSSL=1 USE_PCRE2=1 USE_PCRE2_JIT=1 \
  USE_LUA=1 LUA_INC=/usr/include/lua5.4 LUA_LIB_NAME=lua5.4 USE_PROMEX=1 >&2

mkdir -p "$(dirname "$cached")"
install -m 0755 "$work/src/haproxy" "$cached.tmp"
mv "$cached.tmp" "$cached"
found "$cached"
