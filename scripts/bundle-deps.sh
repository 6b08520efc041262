#!/usr/bin/env bash
# Make the offline bundle of the course's header-only dependencies, for machines without network
# or packages (GPU nodes of a cluster, exam machines):
#
#   scripts/bundle-deps.sh [DEST]        # DEST defaults to deps/ in the repository
#
# writes DEST/include/{CLI,nlohmann,toml++,doctest}/, DEST/licenses/ and DEST/VERSIONS. Copy DEST
# to the offline machine as <repo>/deps (or pass -DLAB_DEPS_DIR=<path>); CMake uses it for every
# library the system does not provide (see cmake/LabDependencies.cmake).
#
# Sources, first that works:
#   apt       `apt-get download` of the Debian/Ubuntu -dev packages, unpacked with `dpkg -x`
#             (no root needed; the package lists must be present: apt-get update)
#   system    the same packages' headers, already installed on this machine (dpkg), when the
#             package lists are missing (a fresh container) or the mirror is unreachable
#   download  the pinned release tarballs named in cmake/LabDependencies.cmake (curl or wget)
# LAB_BUNDLE_METHOD=apt|system|download forces one of them.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$repo/deps}"
method="${LAB_BUNDLE_METHOD:-auto}"
deps_cmake="$repo/cmake/LabDependencies.cmake"

die() { echo "bundle-deps: error: $*" >&2; exit 1; }
say() { echo "bundle-deps: $*"; }

# alias|debian package|header under include/ (the header decides which folder is copied)
libraries=(
  "cli11|libcli11-dev|CLI/CLI.hpp"
  "json|nlohmann-json3-dev|nlohmann/json.hpp"
  "toml|libtomlplusplus-dev|toml++/toml.h"
  "doctest|doctest-dev|doctest/doctest.h"
)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
staged="$work/bundle"
mkdir -p "$staged/include" "$staged/licenses"
: >"$staged/VERSIONS"

from_apt() {
  command -v apt-get >/dev/null && command -v dpkg >/dev/null || { say "no apt-get/dpkg here"; return 1; }
  local entry alias pkg header deb
  for entry in "${libraries[@]}"; do
    IFS='|' read -r alias pkg header <<<"$entry"
    (cd "$work" && apt-get download "$pkg" >/dev/null 2>"$work/apt.err") || {
      say "apt-get download $pkg failed: $(tail -n 1 "$work/apt.err")"
      return 1
    }
    deb="$(ls "$work"/"${pkg}"_*.deb | head -n 1)"
    mkdir -p "$work/x-$alias"
    dpkg -x "$deb" "$work/x-$alias"
    [[ -f "$work/x-$alias/usr/include/$header" ]] || { say "$pkg has no usr/include/$header"; return 1; }
    cp -R "$work/x-$alias/usr/include/${header%%/*}" "$staged/include/"
    if [[ -f "$work/x-$alias/usr/share/doc/$pkg/copyright" ]]; then
      mkdir -p "$staged/licenses/$alias"
      cp "$work/x-$alias/usr/share/doc/$pkg/copyright" "$staged/licenses/$alias/"
    fi
    echo "$alias $pkg $(dpkg-deb -f "$deb" Version) (apt)" >>"$staged/VERSIONS"
  done
}

from_system() {
  command -v dpkg-query >/dev/null || { say "no dpkg-query here"; return 1; }
  local entry alias pkg header version
  for entry in "${libraries[@]}"; do
    IFS='|' read -r alias pkg header <<<"$entry"
    version="$(dpkg-query -W -f='${Status} ${Version}' "$pkg" 2>/dev/null)" || version=""
    [[ "$version" == "install ok installed "* ]] || { say "$pkg is not installed"; return 1; }
    [[ -f "/usr/include/$header" ]] || { say "$pkg is installed but /usr/include/$header is missing"; return 1; }
    cp -R "/usr/include/${header%%/*}" "$staged/include/"
    if [[ -f "/usr/share/doc/$pkg/copyright" ]]; then
      mkdir -p "$staged/licenses/$alias"
      cp "/usr/share/doc/$pkg/copyright" "$staged/licenses/$alias/"
    fi
    echo "$alias $pkg ${version##* } (system)" >>"$staged/VERSIONS"
  done
}

fetch() {  # fetch URL FILE
  if command -v curl >/dev/null; then
    curl -fsSL --retry 2 --connect-timeout 20 -o "$2" "$1"
  elif command -v wget >/dev/null; then
    wget -q -O "$2" "$1"
  else
    say "neither curl nor wget is installed"; return 1
  fi
}

# Prints "URL INCLUDE_SUBDIR" of a lab_dependency(<alias> ...) call in LabDependencies.cmake.
pinned() {
  tr '\n' ' ' <"$deps_cmake" | grep -o "lab_dependency($1 [^)]*)" |
    sed -E 's/.* URL +([^ ]+).* INCLUDE_SUBDIR +([^ )]+).*/\1 \2/'
}

from_download() {
  [[ -f "$deps_cmake" ]] || die "$deps_cmake is missing"
  local entry alias pkg header url subdir tarball top
  for entry in "${libraries[@]}"; do
    IFS='|' read -r alias pkg header <<<"$entry"
    read -r url subdir <<<"$(pinned "$alias")"
    [[ -n "$url" && -n "$subdir" ]] || { say "no pinned URL for $alias in $deps_cmake"; return 1; }
    tarball="$work/$alias.tar.gz"
    fetch "$url" "$tarball" || { say "download of $url failed"; return 1; }
    mkdir -p "$work/x-$alias"
    tar -xzf "$tarball" -C "$work/x-$alias"
    top="$(find "$work/x-$alias" -mindepth 1 -maxdepth 1 -type d | head -n 1)"
    [[ -f "$top/$subdir/$header" ]] || { say "$url has no $subdir/$header"; return 1; }
    cp -R "$top/$subdir/${header%%/*}" "$staged/include/"
    mkdir -p "$staged/licenses/$alias"
    find "$top" -maxdepth 1 -type f -iname 'licen[cs]e*' -exec cp {} "$staged/licenses/$alias/" \;
    echo "$alias $url (download)" >>"$staged/VERSIONS"
  done
}

reset_stage() {
  rm -rf "$staged" "$work"/x-* "$work"/*.deb "$work"/*.tar.gz
  mkdir -p "$staged/include" "$staged/licenses"
  : >"$staged/VERSIONS"
}

done_with=""
if [[ "$method" == auto || "$method" == apt ]]; then
  if from_apt; then done_with=apt; else reset_stage; fi
fi
if [[ -z "$done_with" && ( "$method" == auto || "$method" == system ) ]]; then
  if from_system; then done_with=system; else reset_stage; fi
fi
if [[ -z "$done_with" && ( "$method" == auto || "$method" == download ) ]]; then
  if from_download; then done_with=download; fi
fi
[[ -n "$done_with" ]] || die "could not get the libraries (method: $method); see the messages above"

# toml++ 3.4 names its main header toml.hpp, Debian's 3.3 only toml.h: provide both names.
if [[ ! -f "$staged/include/toml++/toml.hpp" ]]; then
  printf '%s\n' '#pragma once' '#include "toml.h"  // added by scripts/bundle-deps.sh' \
    >"$staged/include/toml++/toml.hpp"
fi
{
  echo "# Offline bundle made by scripts/bundle-deps.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ) ($done_with)"
  cat "$staged/VERSIONS"
} >"$work/VERSIONS" && mv "$work/VERSIONS" "$staged/VERSIONS"

rm -rf "$dest.new"
mkdir -p "$(dirname "$dest")"
cp -R "$staged" "$dest.new"
rm -rf "$dest"
mv "$dest.new" "$dest"
say "wrote $dest ($done_with):"
sed 's/^/  /' "$dest/VERSIONS"
