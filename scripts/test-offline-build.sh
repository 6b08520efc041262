#!/usr/bin/env bash
# Proves that the course builds on a machine with no dependency packages and no network, from the
# offline bundle alone:
#
#   scripts/test-offline-build.sh [TARGET...]      # default target: lab-host
#
# 1. makes a fresh bundle with scripts/bundle-deps.sh (or uses LAB_OFFLINE_BUNDLE if set),
# 2. configures a fresh build folder with find_package disabled for CLI11, nlohmann_json,
#    tomlplusplus and doctest, and with FetchContent downloads disabled,
# 3. asserts that the configure log took all four "from the offline bundle",
# 4. builds the targets (lab-host = the checker and the unit-test executables: everything that uses
#    the four libraries; see tests/CMakeLists.txt).
#
# Environment: LAB_OFFLINE_BUILD_DIR (default build/offline), LAB_OFFLINE_BUNDLE (an existing
# bundle to test instead of making one), CUDA_ARCHITECTURES (default 90), CMAKE_BUILD_PARALLEL_LEVEL.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${LAB_OFFLINE_BUILD_DIR:-$repo/build/offline}"
archs="${CUDA_ARCHITECTURES:-90}"
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(lab-host)

die() { echo "test-offline-build: FAILED: $*" >&2; exit 1; }
say() { echo "test-offline-build: $*"; }

if [[ -n "${LAB_OFFLINE_BUNDLE:-}" ]]; then
  bundle="$(cd "$LAB_OFFLINE_BUNDLE" && pwd)" || die "LAB_OFFLINE_BUNDLE=$LAB_OFFLINE_BUNDLE does not exist"
  [[ -d "$bundle/include" ]] || die "LAB_OFFLINE_BUNDLE=$bundle has no include/ folder"
else
  bundle="$build-bundle"
  "$repo/scripts/bundle-deps.sh" "$bundle" || die "scripts/bundle-deps.sh could not make a bundle"
fi

rm -rf "$build"
mkdir -p "$build"
log="$build/configure.log"
say "configuring $build against the bundle $bundle"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if ! cmake -S "$repo" -B "$build" "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES="$archs" \
    -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_tomlplusplus=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_doctest=ON \
    -DFETCHCONTENT_FULLY_DISCONNECTED=ON \
    -DLAB_DEPS_DIR="$bundle" \
    -DLAB_BUILD_DOCS=OFF >"$log" 2>&1; then
  cat "$log" >&2
  die "configure failed (log above, also in $log)"
fi

missing=()
for package in CLI11 nlohmann_json tomlplusplus doctest; do
  grep -q "lab: $package from the offline bundle" "$log" || missing+=("$package")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  grep '^-- lab:' "$log" >&2 || true
  die "not taken from the offline bundle: ${missing[*]} (lines above from $log)"
fi
say "all four libraries come from the offline bundle"

# Name unknown targets plainly instead of leaving it to the build tool's message.
known="$(cmake --build "$build" --target help 2>/dev/null || true)"
for target in "${targets[@]}"; do
  grep -Eq "(^|[[:space:]])$target(:|[[:space:]]|$)" <<<"$known" ||
    die "target '$target' does not exist in this build (is the code that defines it there yet?)"
done

say "building: ${targets[*]}"
cmake --build "$build" --target "${targets[@]}" || die "the build of ${targets[*]} failed"
say "OK: ${targets[*]} built from the offline bundle, without system packages or downloads"
