#!/usr/bin/env bash
# Runs, exactly as written, every shell block of the lesson texts and slides that calls ncu (lines
# that call nsys are left out: Nsight Systems is not on every GPU machine). A block fails if any
# command in it exits non-zero, or if one of its ncu commands profiled no kernel, or none whose
# name its --kernel-name (-k) selects. Needs a GPU, ncu on PATH and a built release tree.
# Usage: scripts/check-ncu-commands.sh [LOG_DIR]   (LESSONS="04 10" limits it to those lessons)
# Writes LOG_DIR/ncu-commands.txt: the GPU, the commit and one line per block, ok or FAIL; commit
# it as measurements/<gpu>/ncu-commands.txt whenever a lesson text or program changes.
set -uo pipefail
cd "$(dirname "$0")/.."
log=${1:-build/ncu-commands}
mkdir -p "$log"
summary="$log/ncu-commands.txt"
{
  echo "# scripts/check-ncu-commands.sh, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "# $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); $(command -v ncu > /dev/null && ncu --version | tail -1)"
} > "$summary"

# Put before each block: ncu as a function that runs the real one and checks what it profiled.
read -r -d '' wrapper << 'EOF'
ncu() {
  local kernel="" prev="" imported=0 a
  for a in "$@"; do
    case $prev in --kernel-name | -k) kernel=$a ;; esac
    case $a in --kernel-name=*) kernel=${a#*=} ;; --import | -i | --import=*) imported=1 ;; esac
    prev=$a
  done
  # What ncu printed goes where the block sends it (a block may redirect it to a file); the
  # verdicts go to stderr, so they reach the log either way.
  local out rc
  out=$(command ncu "$@" 2>&1) && rc=0 || rc=$?
  printf '%s\n' "$out"
  if [ "$rc" != 0 ]; then echo "CHECK FAILED: ncu exited with $rc" >&2; return 1; fi
  # Reading a saved report profiles nothing: it must print what it was asked for.
  if [ "$imported" = 1 ]; then
    [ -n "$out" ] || { echo "CHECK FAILED: ncu --import printed nothing" >&2; return 1; }
    return 0
  fi
  local profiled
  profiled=$(printf '%s\n' "$out" | sed -n 's/^==PROF== Profiling "\([^"]*\)".*/\1/p' | sort -u)
  if [ -z "$profiled" ]; then echo "CHECK FAILED: ncu profiled no kernel" >&2; return 1; fi
  [ -z "$kernel" ] && return 0
  case $kernel in
    regex:*) printf '%s\n' "$profiled" | grep -qE -- "${kernel#regex:}" ;;
    *) printf '%s\n' "$profiled" | grep -qxF -- "$kernel" ;;
  esac || { echo "CHECK FAILED: no kernel named by '$kernel' was profiled (profiled: $(echo $profiled))" >&2; return 1; }
}
EOF

failed=0
for text in lessons/[0-9][0-9]-*/README.md slides/[0-9][0-9]-*.md; do
  case $text in
    lessons/*) name=$(basename "$(dirname "$text")") ;;
    *) name=slides-$(basename "$text" .md) ;;
  esac
  number=${name#slides-}
  if [ -n "${LESSONS:-}" ] && [[ " $LESSONS " != *" ${number%%-*} "* ]]; then continue; fi
  # Split the text's ```sh blocks into files; keep those that call ncu.
  awk -v dir="$log" -v name="$name" '
    /^```sh/ { n++; inside = 1; file = sprintf("%s/%s-%02d.sh", dir, name, n); next }
    /^```/   { inside = 0; next }
    inside   { print > file }' "$text"
  for block in "$log/$name"-[0-9][0-9].sh; do
    [ -e "$block" ] || continue
    if ! grep -q '^ *ncu ' "$block"; then rm -f "$block"; continue; fi
    { printf '%s\n' "$wrapper"; grep -v '^ *nsys ' "$block"; } > "$block.run"
    # The blocks run from the repository's root, as a student pastes them; a file they wrote
    # there (a report, a CSV: new since the block started, and named in the block's text) is
    # removed afterwards, so the check leaves the tree as it found it.
    before=$(LC_ALL=C ls -A)
    ran=0
    bash -e "$block.run" > "${block%.sh}.log" 2>&1 || ran=$?
    LC_ALL=C comm -13 <(printf '%s\n' "$before") <(LC_ALL=C ls -A) | while IFS= read -r new; do
      if [ -f "$new" ] && grep -qF -- "${new%.*}" "$block"; then rm -f -- "$new"; fi
    done
    if [ "$ran" = 0 ]; then
      echo "ok    $text block ${block: -5:2}" | tee -a "$summary"
    else
      echo "FAIL  $text block ${block: -5:2} (see ${block%.sh}.log)" | tee -a "$summary"
      grep "CHECK FAILED" "${block%.sh}.log" | tee -a "$summary"
      tail -n 15 "${block%.sh}.log"
      failed=1
    fi
  done
done
exit $failed
