#!/usr/bin/env bash
# scripts/compare-runs.py, which says whether a change to the harnesses moved a number
# (scripts/gpu-round.sh ab), judged on the committed H100 run: the run against itself is the
# same; a copy with a variant made wrong, a metric gone and a time 10% longer is not.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
compare="$repo/scripts/compare-runs.py"
runs="$repo/measurements/h100"

python3 "$compare" "$runs" "$runs" > "$work/same.txt"
grep -q "median change 0.00%, 0 moved" "$work/same.txt"

mkdir "$work/after"
cp "$runs"/04-coalescing-solution.json "$runs"/08-reductions-solution.json "$work/after/"
python3 - "$work/after" <<'PY'
import json, sys
path = sys.argv[1] + "/04-coalescing-solution.json"
doc = json.load(open(path))
exercise = next(v for v in doc["variants"] if v["name"] == "exercise")
exercise["correct"] = False
exercise["time_ms"]["median"] *= 1.1
del doc["metrics"]["stride_2_vs_stride_1"]
json.dump(doc, open(path, "w"))
PY
if python3 "$compare" "$runs" "$work/after" > "$work/changed.txt"; then
  echo "a wrong variant and a missing metric were not found different"; exit 1
fi
for expected in "DIFFERENT: 04-coalescing-solution exercise: correct True -> False" \
                "DIFFERENT: 04-coalescing-solution: metric names differ" \
                "moved: 04-coalescing-solution exercise +10.0%" \
                "DIFFERENT: 01-timing-pitfalls-solution: only in before"; do
  grep -qF "$expected" "$work/changed.txt" || { cat "$work/changed.txt"; echo "missing: $expected"; exit 1; }
done
echo "compare-runs: same run same, changes found"
