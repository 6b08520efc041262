#!/usr/bin/env bash
# A round on a GPU machine, in phases that each fit in a few minutes:
#   scripts/gpu-round.sh build     configure (release preset; the deps/ bundle covers missing
#                                  libraries), build, the GPU and unit tests, every lesson's
#                                  starter and solution with result files, the roofline of
#                                  the solutions (table + SVG), ncu agreement (NCU=0 skips it)
#   scripts/gpu-round.sh counters  the counter rules through ncu: lessons 04, 05, 10 and 12 judged
#                                  (solution and starter), then once more as an unprivileged
#                                  user, where ncu may be refused the counters (the fallback)
#   scripts/gpu-round.sh selftest  the checker's selftest: solutions pass, starters fail,
#                                  mutants get their verdicts (REPEAT=N for N rounds); with
#                                  several GPUs, the lessons dealt out, one selftest per GPU
#   scripts/gpu-round.sh grade     a submission of every solution graded as a student's, timed
#                                  (the grading-time goal; containment line)
#   scripts/gpu-round.sh alternatives  the solutions with every mutant alt_* (a legitimately
#                                  different correct solution) in place, graded: each must pass
#   scripts/gpu-round.sh mutants   MUTANTS="NN:name ...": those mutants graded as one submission
#                                  (new mutants checked in minutes, not a whole selftest)
#   scripts/gpu-round.sh ab        BEFORE=<tree of an earlier commit>: both built, every lesson's
#                                  solution and starter run from each in turn, compared
#                                  (scripts/compare-runs.py) with the roofline of both sides
#   scripts/gpu-round.sh shared    lab-check run (LESSONS, solution and starter) while another
#                                  CUDA process keeps the GPU busy: verdicts read environment
#   scripts/gpu-round.sh filter    the system-call filter under the tools that inject themselves:
#                                  ncu on lesson 04 with and without it, compute-sanitizer on
#                                  lesson 05 with it
#   scripts/gpu-round.sh ncu-commands  every ncu block of the lesson texts and slides run as
#                                  written (scripts/check-ncu-commands.sh); its summary goes to
#                                  measurements/<gpu>/ncu-commands.txt, to be committed
#   scripts/gpu-round.sh tracer    the checker's tracer injected by hand into lesson 09 (what it
#                                  costs), then every solution judged with it (agreement)
# Every phase but build expects the release build to exist (build first, in the same call).
# CHECK_ARGS goes to lab-check in grade, alternatives and selftest (CHECK_ARGS="--baselines
# in-process": the baselines timed in the student's program, not by the course's starter).
# Logs go to build/gpu-round/; when $OUT is set (the device tool) they are also archived there.
set -uo pipefail
cd "$(dirname "$0")/.."
phase=${1:-build}
log=build/gpu-round
mkdir -p "$log"
build=build/release
status=0
step() {  # step NAME COMMAND...: run it, keep its log, remember a failure, show the end
  local name=$1
  shift
  echo "== $name: $*"
  if ! "$@" > "$log/$name.log" 2>&1; then
    echo "   FAILED (see $name.log)"
    status=1
  fi
  tail -n 20 "$log/$name.log"
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv | tee "$log/gpu.txt"
case $phase in
  build)
    step configure cmake --preset release
    step build cmake --build build/release -- -k 0  # everything, the tests too; keep going: every failure in one log
    step ctest ctest --preset release --output-on-failure -E checker.selftest
    for dir in lessons/[0-9][0-9]-*/; do
      lesson=$(basename "$dir")
      for kind in starter solution; do
        step "$lesson-$kind" "$build/lessons/$lesson/$kind" --json "$log/$lesson-$kind.json"
      done
    done
    step roofline "$build/checker/lab-check" roofline "$log"/0[3-9]-*-solution.json \
      "$log"/1[0-9]-*-solution.json --svg "$log/roofline.svg"
    if [ "${NCU:-1}" != 0 ]; then step ncu-agreement scripts/ncu-agreement.sh "$build" "$log/ncu"; fi
    ;;
  counters)
    for kind in solution starter; do
      step "counters-$kind" "$build/checker/lab-check" run ${LESSONS:-04 05 10 12 13} --build "$kind" --report
    done
    # The fallback, for real: a user without profiling rights (if the driver restricts counters
    # to administrators, ncu answers ERR_NVGPUCTRPERM and the counter rules are skipped).
    if [ "$(id -u)" = 0 ] && command -v useradd > /dev/null; then
      id labstudent > /dev/null 2>&1 || useradd --create-home labstudent
      chmod -R o+rX "$PWD"
      step counters-unprivileged su labstudent -c \
        "cd '$PWD' && $build/checker/lab-check run 10 --build solution --quick --report"
    fi
    ;;
  selftest)
    # LESSONS="02 05" limits it; REPEAT=5 repeats solutions and starters (mutants once).
    # shellcheck disable=SC2086
    # MUTANTS=0 leaves the mutants out (solutions and starters only).
    mutants=--mutants-once
    [ "${MUTANTS:-1}" = 0 ] && mutants=--no-mutants
    # On a machine of several GPUs the lessons are dealt out, one selftest per GPU at once, each
    # with a grading folder of its own (a second one on the same folder would wait for the first).
    gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
    lessons=(${LESSONS:-$(cd lessons && ls -d [0-9][0-9]-* | cut -c1-2) _template})
    if [ "$gpus" -gt 1 ] && [ "${#lessons[@]}" -gt 1 ]; then
      "$build/checker/lab-check" selftest --seal-only > /dev/null  # builds the mutants, once
      for ((g = 0; g < gpus; ++g)); do
        part=()
        for ((k = g; k < ${#lessons[@]}; k += gpus)); do part+=("${lessons[k]}"); done
        [ ${#part[@]} -gt 0 ] || continue
        CUDA_VISIBLE_DEVICES=$g step "selftest-gpu$g" "$build/checker/lab-check" ${CHECK_ARGS:-} selftest \
          "${part[@]}" --repeat "${REPEAT:-1}" $mutants --grading-dir "$build/grading-selftest-gpu$g" &
      done
      wait
      # step's own record of a failure stays in its subshell: read the logs instead.
      for f in "$log"/selftest-gpu*.log; do grep -q "selftest passed" "$f" || status=1; done
    else
      step selftest "$build/checker/lab-check" ${CHECK_ARGS:-} selftest ${LESSONS:-} --repeat "${REPEAT:-1}" $mutants
    fi
    ;;
  grade)
    sub=$(mktemp -d)/alice
    for d in solutions/[0-9][0-9]-*/; do
      mkdir -p "$sub/$(basename "$d")" && cp "$d/exercise.cu" "$sub/$(basename "$d")/"
    done
    step grade bash -c "time $build/checker/lab-check ${CHECK_ARGS:-} grade '$sub' --out '$log/graded'"
    ;;
  alternatives)
    # Legitimately different correct solutions must pass: a submission of the solutions with
    # every lesson's solutions/NN-topic/mutants/alt_*.patch, made into a file by lab-mutant, in
    # place of its solution, graded as a student's (if a lesson has several, each later one is
    # graded in a submission of its own).
    root=$(mktemp -d)
    declare -A placed  # alternatives of each lesson placed so far: the next goes to sub<that>
    for alt in solutions/[0-9][0-9]-*/mutants/alt_*.patch; do
      lesson=$(basename "$(dirname "$(dirname "$alt")")")
      k=${placed[$lesson]:-0}
      placed[$lesson]=$((k + 1))
      if [ ! -d "$root/sub$k" ]; then
        for d in solutions/[0-9][0-9]-*/; do
          mkdir -p "$root/sub$k/$(basename "$d")" && cp "$d/exercise.cu" "$root/sub$k/$(basename "$d")/"
        done
      fi
      "$build/checker/lab-mutant" . "$lesson" "$(basename "$alt" .patch)" "$root/sub$k/$lesson/exercise.cu" ||
        status=1
      echo "sub$k: $lesson <- $alt"
    done
    step alternatives bash -c "time $build/checker/lab-check ${CHECK_ARGS:-} grade '$root'/sub* --out '$log/alternatives'"
    ;;
  ncu-commands)
    step ncu-commands scripts/check-ncu-commands.sh "$log/ncu-commands"
    gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | sed 's/NVIDIA //; s/ .*//' | tr 'A-Z' 'a-z')
    mkdir -p "measurements/$gpu" && cp "$log/ncu-commands/ncu-commands.txt" "measurements/$gpu/"
    ;;
  mutants)
    # MUTANTS="04:caches_input_copy 11:waits_when_empty": those mutants graded as one submission
    # (a lesson's first named mutant only), a few lessons in minutes where their selftest takes
    # half an hour; read each verdict against its expected.toml entry by eye.
    root=$(mktemp -d)
    for m in ${MUTANTS:?MUTANTS=\"NN:name ...\"}; do
      dir=$(ls -d solutions/"${m%%:*}"-*/)
      lesson=$(basename "$dir")
      [ -e "$root/sub/$lesson/exercise.cu" ] && continue
      "$build/checker/lab-mutant" . "$lesson" "${m##*:}" "$root/sub/$lesson/exercise.cu" || status=1
      echo "sub: $lesson <- ${m##*:} ($(grep -A2 "^\[${m##*:}\]" "$dir/mutants/expected.toml" | tr '\n' ' '))"
    done
    step mutants bash -c "time $build/checker/lab-check ${CHECK_ARGS:-} grade '$root'/sub --out '$log/mutants'"
    ;;
  ab)
    # BEFORE=<source tree of an earlier commit> (git archive REV | tar -x -C DIR, with a copy of
    # deps/ in it): its lesson programs built beside this build, then each lesson's KINDS
    # ("solution starter") of LESSONS ("01 04"; all when unset) run from both builds in turn,
    # before then after, so that drift hits both alike. Result files in ab/before and ab/after,
    # compared by scripts/compare-runs.py; the roofline of each side's solutions.
    before=${BEFORE:?BEFORE=<source tree of the earlier commit>}
    lessons=() programs=()
    for dir in lessons/[0-9][0-9]-*/; do
      lesson=$(basename "$dir")
      [[ -z ${LESSONS:-} || " $LESSONS " == *" ${lesson:0:2} "* ]] || continue
      lessons+=("$lesson")
      for kind in ${KINDS:-solution starter}; do programs+=("$lesson-$kind"); done
    done
    step configure-before bash -c "cd '$before' && cmake --preset release"
    step build-before cmake --build "$before/build/release" --target "${programs[@]}"
    mkdir -p "$log/ab/before" "$log/ab/after"
    for lesson in "${lessons[@]}"; do
      for kind in ${KINDS:-solution starter}; do
        step "ab-$lesson-$kind-before" "$before/build/release/lessons/$lesson/$kind" \
          --json "$log/ab/before/$lesson-$kind.json"
        step "ab-$lesson-$kind-after" "$build/lessons/$lesson/$kind" \
          --json "$log/ab/after/$lesson-$kind.json"
      done
    done
    shopt -s nullglob
    for side in before after; do  # the solutions' roofline; lessons 01 and 02 move no counted bytes
      solutions=("$log/ab/$side"/0[3-9]-*-solution.json "$log/ab/$side"/1[0-9]-*-solution.json)
      [ ${#solutions[@]} -gt 0 ] && step "roofline-$side" "$build/checker/lab-check" roofline "${solutions[@]}"
    done
    step compare python3 scripts/compare-runs.py "$log/ab/before" "$log/ab/after"
    ;;
  shared)
    # The load: a lesson program in a loop, a CUDA process that is not the checker's.
    ( while :; do "$build/lessons/04-coalescing/solution" --quick > /dev/null 2>&1; done ) &
    hog=$!
    sleep 3
    for kind in solution starter; do
      # shellcheck disable=SC2086
      step "shared-$kind" "$build/checker/lab-check" run ${LESSONS:-04 09} --build "$kind"
    done
    kill "$hog"
    wait "$hog" 2> /dev/null
    ;;
  tracer)
    # The tracer injected by hand into lesson 09 (1000 small launches per call, the lesson most
    # sensitive to what tracing costs), then the same program without it: the cost per variant.
    trace="$log/09.trace"
    step tracer env CUDA_INJECTION64_PATH="$PWD/$build/checker/tracer/liblab_tracer.so" \
      LAB_TRACE_FILE="$trace" "$build/lessons/09-graphs/solution" --json "$log/09-traced.json"
    head -n 1 "$trace"
    echo "tagged launches $(grep -c '^T' "$trace"), spans $(grep -c '^S' "$trace")"
    grep '^F' "$trace"
    tail -n 1 "$trace"
    step untraced "$build/lessons/09-graphs/solution" --json "$log/09-untraced.json"
    step tracer-cost python3 checker/tracer/agreement.py --cost "$log/09-traced.json" "$log/09-untraced.json"
    # Every solution, judged with the tracer: each variant's reported and traced medians.
    step corroboration bash -c "'$build/checker/lab-check' run ${LESSONS:-} --build solution \
      --format json --report > '$log/corroboration.json'"
    step agreement python3 checker/tracer/agreement.py "$log/corroboration.json"
    ;;
  filter)
    # ncu on lesson 04's exercise with the program under the filter (which the checker does not
    # ask for: ncu's code in the program opens a lock file once profiling starts), then without;
    # compute-sanitizer through the checker, which filters it.
    for f in on off; do
      flag=; [ $f = on ] && flag=--restrict-syscalls
      step "filter-ncu-$f" ncu --clock-control none --profile-from-start off --metrics \
        gpu__time_duration.sum "$build/lessons/04-coalescing/solution" --profile --quick \
        --variant exercise ${flag:+"$flag"}
    done
    step filter-sanitize "$build/checker/lab-check" run 05 --build solution --quick --sanitize --report
    ;;
  *)
    echo "usage: scripts/gpu-round.sh build|counters|selftest|grade|alternatives|ab|shared|filter|tracer" >&2
    exit 2
    ;;
esac
if [ -n "${OUT:-}" ]; then tar czf "$OUT/gpu-round-$phase.tgz" -C "$log" .; fi
exit $status
