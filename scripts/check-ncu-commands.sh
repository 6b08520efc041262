#!/usr/bin/env bash
# Runs, exactly as written, every shell block of the lesson texts that calls ncu (lines that call
# nsys are left out: Nsight Systems is not on every GPU machine). A block fails if it exits
# non-zero or if ncu profiled no kernel. Needs a GPU, ncu on PATH and a built release tree.
# Usage: scripts/check-ncu-commands.sh [LOG_DIR]   (LESSONS="04 10" limits it to those lessons)
set -uo pipefail
cd "$(dirname "$0")/.."
log=${1:-build/ncu-commands}
mkdir -p "$log"
failed=0
for readme in lessons/[0-9][0-9]-*/README.md; do
  lesson=$(basename "$(dirname "$readme")")
  if [ -n "${LESSONS:-}" ] && [[ " $LESSONS " != *" ${lesson%%-*} "* ]]; then continue; fi
  # Split the README's ```sh blocks into files; keep those that call ncu.
  awk -v dir="$log" -v lesson="$lesson" '
    /^```sh/ { n++; inside = 1; file = sprintf("%s/%s-%02d.sh", dir, lesson, n); next }
    /^```/   { inside = 0; next }
    inside   { print > file }' "$readme"
  for block in "$log/$lesson"-*.sh; do
    [ -e "$block" ] || continue
    if ! grep -q '^ *ncu ' "$block"; then rm -f "$block"; continue; fi
    grep -v '^ *nsys ' "$block" > "$block.run"
    if bash -e "$block.run" > "${block%.sh}.log" 2>&1 && ! grep -q "No kernels were profiled" "${block%.sh}.log"; then
      echo "ok    $block"
    else
      echo "FAIL  $block (see ${block%.sh}.log)"
      tail -n 15 "${block%.sh}.log"
      failed=1
    fi
  done
done
exit $failed
