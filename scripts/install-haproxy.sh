#!/usr/bin/env bash
# Finds an HAProxy for hawser's tests and local runs, or builds one from Debian's
# source package into a cache outside the repository (where the source cannot be
# fetched, Debian's own build of the same version, unpacked with its libraries).
#
#   scripts/install-haproxy.sh        any HAProxy >= 3.0; builds 3.0.11 when none is found
#   scripts/install-haproxy.sh 3.0    an HAProxy 3.0; builds 3.0.11 (Debian trixie)
#   scripts/install-haproxy.sh 3.2    an HAProxy 3.2; builds the newest 3.2 in Debian sid
#
# The series may also come from $HAWSER_HAPROXY_SERIES; the argument wins.
# Order: $HAWSER_HAPROXY, then `haproxy` on PATH (each only when it is the series
# asked for), then the cache, then a build. Builds are cached side by side as
# <cache>/haproxy-<version>/haproxy, so both series can be installed at once; delete
# a cached build to rebuild it (for instance to pick up a newer 3.2 from sid).
# Prints the binary's absolute path on stdout (all progress goes to stderr), so
#   export HAWSER_HAPROXY="$(scripts/install-haproxy.sh)"
# is all a caller needs. Installing needs root (apt-get); a build takes about a
# minute and a half on two cores.
set -euo pipefail

series="${1:-${HAWSER_HAPROXY_SERIES:-}}"
# Which Debian suite's source package each series is built from, and the exact
# version when the tests are pinned to one (3.0.11); otherwise the newest of the series.
case $series in
  "" | 3.0) suite=trixie pinned=3.0.11 ;;
  3.2) suite=sid pinned="" ;;
  *)
    printf 'install-haproxy: unknown series %q; expected 3.0 or 3.2\n' "$series" >&2
    exit 64
    ;;
esac
cache_root="${HAWSER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hawser}"

log() { printf 'install-haproxy: %s\n' "$*" >&2; }

# The first line `haproxy -v` prints. All of it is read: a reader that stops at the
# first line could end HAProxy with SIGPIPE while it still writes, which pipefail
# would count as a failure.
version_line() { "$1" -v 2>/dev/null | awk 'NR == 1'; }

# The major.minor $1 reports (`3.2` of `HAProxy version 3.2.26-1 ...`), if it runs.
series_of() {
  local line
  line=$(version_line "$1") || return 1
  [[ $line =~ version\ ([0-9]+)\.([0-9]+) ]] || return 1
  printf '%s.%s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
}

# True when $1 runs and is what was asked for: the series given, or any >= 3.0.
acceptable() {
  local found_series major minor
  found_series=$(series_of "$1") || return 1
  if [[ -n $series ]]; then
    [[ $found_series == "$series" ]]
  else
    IFS=. read -r major minor <<<"$found_series"
    ((major > 3 || (major == 3 && minor >= 0)))
  fi
}

found() { log "using $1 ($(version_line "$1"))"; printf '%s\n' "$1"; exit 0; }

# The cached build for this request: the pinned version, else the newest of the series.
cached_build() {
  local dir
  if [[ -n $pinned ]]; then
    dir="$cache_root/haproxy-$pinned"
  else
    dir=$(find "$cache_root" -maxdepth 1 -type d -name "haproxy-$series.*" 2>/dev/null | sort -V | tail -n 1)
  fi
  [[ -n $dir && -x $dir/haproxy ]] && acceptable "$dir/haproxy" && printf '%s\n' "$dir/haproxy"
}

wanted=${series:-">= 3.0"}
if [[ -n ${HAWSER_HAPROXY:-} ]]; then
  acceptable "$HAWSER_HAPROXY" && found "$HAWSER_HAPROXY"
  log "HAWSER_HAPROXY=$HAWSER_HAPROXY is not an HAProxy $wanted; looking elsewhere"
fi
if on_path=$(command -v haproxy 2>/dev/null) && acceptable "$on_path"; then
  found "$on_path"
fi
if cached=$(cached_build); then found "$cached"; fi

# One build at a time: parallel test runs wait here for the first to finish.
mkdir -p "$cache_root"
exec 9>"$cache_root/.install.lock"
flock 9
if cached=$(cached_build); then found "$cached"; fi

log "no HAProxy $wanted found; installing one from Debian's $suite packages"
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"

# The URI of the machine's own Debian archive, reused for the deb-src entry.
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

# Source packages only (Types: deb-src): apt keeps installing binaries from the
# machine's own release, never from trixie or sid.
src_list=/etc/apt/sources.list.d/hawser-$suite-src.sources
if [[ ! -f $src_list ]]; then
  printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$uri" "$suite" | $sudo tee "$src_list" >/dev/null
fi
$sudo apt-get update -qq >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  build-essential dpkg-dev libssl-dev libpcre2-dev liblua5.4-dev >&2

# The Debian version to fetch: the pinned upstream version's newest revision, or the
# newest of the series among the source packages apt knows.
if [[ -n $pinned ]]; then prefix="$pinned-"; else prefix="$series."; fi
debian_version=$(apt-cache showsrc haproxy 2>/dev/null | awk -v p="$prefix" \
  '/^Version:/ && index($2, p) == 1 {print $2}' | sort -V | tail -n 1)
[[ -n $debian_version ]] || { log "Debian's $suite sources have no haproxy $prefix*"; exit 1; }
version=${debian_version%%-*}
cached="$cache_root/haproxy-$version/haproxy"
log "installing HAProxy $version (Debian $debian_version)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Builds $version from Debian's source package; false when apt cannot fetch the source.
build_from_source() {
  (cd "$work" && apt-get source --download-only --tar-only "haproxy=$debian_version" >&2) || return 1
  local tarball
  tarball=$(find "$work" -maxdepth 1 -name "haproxy_$version.orig.tar.*" | head -n 1)
  [[ -n $tarball ]] || { log "Debian's source did not provide haproxy_$version.orig.tar.*"; return 1; }
  mkdir -p "$work/src"
  tar -xf "$tarball" -C "$work/src" --strip-components=1
  make -C "$work/src" -j"$(nproc)" TARGET=linux-glibc USE_OPENSSL=1 USE_PCRE2=1 USE_PCRE2_JIT=1 \
    USE_LUA=1 LUA_INC=/usr/include/lua5.4 LUA_LIB_NAME=lua5.4 USE_PROMEX=1 >&2
  mkdir -p "$(dirname "$cached")"
  install -m 0755 "$work/src/haproxy" "$cached.tmp"
}

# Debian's own build of $debian_version, for when its source cannot be fetched (some
# mirrors serve a suite's binary packages but not its sources). The libraries it
# links, and their loader, come from $suite's packages too and go to a directory of
# their own under /usr/local/lib, which HAProxy's check sandbox may read and the
# system's loader never searches; the cached binary's loader and library path point
# there (patchelf). Nothing of $suite is installed as a package, and apt's view of
# $suite stays in a throwaway directory.
unpack_debian_build() {
  local apt_dir="$work/apt" root="$work/root" lib_dir="/usr/local/lib/hawser/haproxy-$version"
  local direct=() libs=()
  # The loader's name and the library directory below are amd64's.
  [[ $(dpkg --print-architecture) == amd64 ]] ||
    { log "Debian's own build is only unpacked on amd64; build $version from source instead"; exit 1; }
  mkdir -p "$apt_dir/sources" "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$root"
  : >"$apt_dir/status"
  printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$uri" "$suite" >"$apt_dir/sources/$suite.sources"
  local apt_opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt_dir/sources"
    -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::State::status=$apt_dir/status"
    -o "Dir::Cache=$apt_dir" -o "Dir::Cache::archives=$apt_dir/archives"
    -o Acquire::Languages=none -o APT::Sandbox::User=root)
  local no_extras=(--no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces --no-enhances)
  apt-get "${apt_opts[@]}" update -qq >&2
  # haproxy's libraries and theirs, not its maintainer scripts' tools (adduser...).
  mapfile -t direct < <(apt-cache "${apt_opts[@]}" depends "${no_extras[@]}" haproxy |
    awk '/Depends:/ && $2 ~ /^(lib|zlib)/ {print $2}' | sort -u)
  mapfile -t libs < <(apt-cache "${apt_opts[@]}" depends --recurse "${no_extras[@]}" "${direct[@]}" |
    grep -E '^(lib|zlib)' | sort -u)
  # The newest haproxy of $suite: its binary version may carry a rebuild suffix (+b1).
  (cd "$work" && apt-get "${apt_opts[@]}" download haproxy "${libs[@]}" >&2)
  for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$root"; done
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends patchelf >&2
  $sudo mkdir -p "$lib_dir"
  $sudo cp -a "$root/usr/lib/x86_64-linux-gnu/." "$lib_dir/"
  cp "$root/usr/sbin/haproxy" "$work/haproxy"
  # RPATH (not RUNPATH), so the libraries' own dependencies are found there too.
  patchelf --set-interpreter "$lib_dir/ld-linux-x86-64.so.2" --force-rpath --set-rpath "$lib_dir" \
    "$work/haproxy"
  mkdir -p "$(dirname "$cached")"
  install -m 0755 "$work/haproxy" "$cached.tmp"
}

if ! build_from_source; then
  log "cannot fetch Debian's $suite source of haproxy $debian_version; using Debian's own build of it"
  unpack_debian_build
fi
version_line "$cached.tmp" | grep -qF "version $version" ||
  { log "the installed binary does not report version $version"; exit 1; }
mv "$cached.tmp" "$cached"
found "$cached"
