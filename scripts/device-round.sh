#!/usr/bin/env bash
# One device-tool call: configure and build what is missing (release preset, deps/ bundle),
# then the steps named in $STEPS, each under the time left, logs under $OUT (or build/device-round).
#   STEPS="ctest selftest:01,02 grade"   SELFTEST_ARGS="--repeat 1 --mutants-once"
# Steps: build (always first), ctest (GPU tests but the selftest), selftest:LESSONS (comma list),
# grade (a submission of every solution graded as a student's, timed), run:LESSONS:BUILD
# (lab-check run, e.g. run:all:solution), shared:LESSONS (lab-check run of solution and starter
# while another process keeps the GPU busy: the verdicts must read environment, never flip),
# ncu-metrics (the tensor-pipe metric names this ncu knows).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build/device-round}
mkdir -p "$out"
deadline=$(( $(date +%s) + ${BUDGET_S:-570} ))
left() { echo $(( deadline - $(date +%s) )); }
run_step() {  # run_step NAME COMMAND...: bounded by the time left, log kept, tail shown
  local name=$1; shift
  local t; t=$(left)
  if [ "$t" -lt 20 ]; then echo "== $name: SKIPPED (no time left)"; return; fi
  echo "== $name ($(date +%T), ${t}s left): $*"
  local start=$(date +%s)
  timeout --kill-after=5 "$t" "$@" > "$out/$name.log" 2>&1
  echo "   exit $? after $(( $(date +%s) - start ))s"
  tail -n "${TAIL:-25}" "$out/$name.log"
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
if [ ! -f build/release/build.ninja ]; then
  run_step configure cmake --preset release ${CONFIGURE_ARGS:-}
fi
TAIL=15 run_step build cmake --build --preset release -- -k 0
for step in ${STEPS:-ctest}; do
  case $step in
    ctest) run_step ctest ctest --preset release --output-on-failure -L gpu -E checker.selftest ;;
    selftest:*)
      lessons=${step#selftest:}
      run_step "selftest-${lessons//,/-}" build/release/checker/lab-check selftest ${lessons//,/ } \
        ${SELFTEST_ARGS:---repeat 1 --mutants-once} ;;
    grade)
      sub=$(mktemp -d)/alice
      mkdir -p "$sub"
      for d in solutions/[0-9][0-9]-*/; do
        mkdir -p "$sub/$(basename "$d")"; cp "$d/exercise.cu" "$sub/$(basename "$d")/"
      done
      run_step grade bash -c "time build/release/checker/lab-check grade '$sub' --out '$out/graded'" ;;
    run:*)
      spec=${step#run:}; lessons=${spec%%:*}; kind=${spec#*:}
      [ "$lessons" = all ] && lessons=""
      run_step "run-${lessons//,/-}-$kind" bash -c "time build/release/checker/lab-check run ${lessons//,/ } --build $kind --report" ;;
    shared:*)
      lessons=${step#shared:}
      # The background load: a lesson program in a loop, a CUDA process that is not the checker's.
      ( while :; do build/release/lessons/04-coalescing/solution --quick > /dev/null 2>&1; done ) &
      hog=$!
      sleep 3
      for kind in solution starter; do
        run_step "shared-$kind" build/release/checker/lab-check run ${lessons//,/ } --build $kind
      done
      kill "$hog"; wait "$hog" 2> /dev/null ;;
    tracer)  # the checker's CUPTI tracer on one lesson program, outside the checker
      run_step tracer bash -c "CUDA_INJECTION64_PATH=\$PWD/build/release/checker/tracer/liblab_tracer.so \
        LAB_TRACE_FILE=$out/04.trace build/release/lessons/04-coalescing/solution --quick --json $out/04.json > /dev/null;
        head -2 $out/04.trace; echo T \$(grep -c '^T' $out/04.trace) K \$(grep -c '^K' $out/04.trace);
        grep '^F' $out/04.trace; tail -1 $out/04.trace" ;;
    ncu-metrics)
      run_step ncu-metrics bash -c "ncu --query-metrics --chip gh100 | grep -iE 'pipe_tensor|tensor_op' | head -40" ;;
    *) echo "unknown step $step" ;;
  esac
done
