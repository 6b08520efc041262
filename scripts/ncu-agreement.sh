#!/usr/bin/env bash
# Does the library agree with an independent instrument? Runs lesson 01's reference kernels
# (about 0.1, 1 and 10 ms) once normally (the library's cold medians, from the result file) and
# once under Nsight Compute (gpu__time_duration of every launch, caches flushed by ncu, clocks
# left alone), then prints both medians side by side.
# Usage: scripts/ncu-agreement.sh BUILD_DIR [OUT_DIR]
set -euo pipefail
build=${1:?usage: scripts/ncu-agreement.sh BUILD_DIR [OUT_DIR]}
out=${2:-$build/ncu-agreement}
mkdir -p "$out"
program="$build/lessons/01-timing-pitfalls/solution"
variants=(--variant kernel_short --variant kernel_medium --variant kernel_long)

"$program" --seed 1 "${variants[@]}" --json "$out/library.json" > "$out/library.txt"
# The kernels' length is calibrated at run time; under ncu that calibration would be skewed, so
# the profiled run reuses the library run's steps per millisecond.
steps=$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["metrics"]["steps_per_ms"]["value"]))' "$out/library.json")
ncu --clock-control none --metrics gpu__time_duration.sum --kernel-name regex:iterate \
    --csv --log-file "$out/ncu.csv" "$program" --seed 1 --steps-per-ms "$steps" "${variants[@]}" > /dev/null

python3 - "$out/library.json" "$out/ncu.csv" <<'PY'
import csv, json, statistics, sys
lib = json.load(open(sys.argv[1]))
rows = [r for r in csv.DictReader(l for l in open(sys.argv[2]) if l.startswith('"'))
        if r.get("Metric Name") == "gpu__time_duration.sum"]
scale = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}
ncu_ms = [float(r["Metric Value"].replace(",", "")) * scale[r["Metric Unit"]] for r in rows]
print(f"{'kernel':14} {'library median':>15} {'ncu median':>12} {'ncu n':>6} {'difference':>11}")
worst = 0.0
for v in lib["variants"]:
    if "time_ms" not in v:
        continue
    m = v["time_ms"]["median"]
    # ncu saw calibration, the library's warm-up and samples of every size: take the launches
    # within 25% of this kernel's median (the sizes are 10x apart).
    near = [t for t in ncu_ms if abs(t / m - 1) < 0.25]
    if not near:
        sys.exit(f"ncu saw no launch near {m} ms; its durations: {sorted(set(round(t, 4) for t in ncu_ms))[:20]}")
    n = statistics.median(near)
    worst = max(worst, abs(m / n - 1))
    print(f"{v['name']:14} {m*1e3:12.1f} us {n*1e3:9.1f} us {len(near):6d} {100*(m/n-1):+10.2f}%")
print(f"largest difference: {100*worst:.2f}% (bar: 3%)")
sys.exit(0 if worst <= 0.03 else 1)
PY
