#!/usr/bin/env bash
# One round on a GPU machine: configure (offline bundle if the system lacks the libraries),
# build everything for this GPU, run the GPU tests, the checker's selftest, and the lessons
# (starter and solution) with their result files; logs go to $OUT (default build/gpu-round).
# Usage: scripts/gpu-round.sh [extra ctest args]
set -uo pipefail
cd "$(dirname "$0")/.."
out=build/gpu-round   # $OUT (the device tool's folder) takes few files: it gets one archive
mkdir -p "$out"
build=build/release
status=0
step() {  # step NAME COMMAND...: run, log to $out/NAME.log, remember failures
  local name=$1; shift
  echo "== $name: $*"
  if ! "$@" > "$out/$name.log" 2>&1; then echo "   FAILED (see $name.log)"; status=1; fi
  tail -n 25 "$out/$name.log"
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv | tee "$out/gpu.txt"
step configure cmake --preset release
step build cmake --build --preset release
step ctest ctest --preset release --output-on-failure "$@"
for lesson in lessons/[0-9][0-9]-*/; do
  lesson=$(basename "$lesson")
  for kind in starter solution; do
    step "$lesson-$kind" "$build/lessons/$lesson/$kind" --json "$out/$lesson-$kind.json"
  done
done
[ -n "${OUT:-}" ] && tar czf "$OUT/gpu-round.tgz" -C "$out" .
exit $status
