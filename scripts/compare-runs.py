#!/usr/bin/env python3
"""Two runs of the lesson programs side by side: did a change to the harnesses move a number?

  compare-runs.py BEFORE_DIR AFTER_DIR
      Each folder holds result files named NN-topic-KIND.json (`--json`), as
      `scripts/gpu-round.sh ab` writes them. For every file in both: each variant's median in
      both and its change (per byte where the sizes differ), whether it was right in both, and whether the two files name the same
      variants, checks (case names, numbers aside, but not the timed calls picked at random)
      and metrics. Then the median change over all variants and
      every variant that moved by more than MOVE (3%, or the second argument of --move).

The exit code is 1 when a file is missing on one side, a name differs, or a variant's
correctness differs: those are changes of behaviour, not noise. Moves in time are reported,
never judged: a host-paced variant moves from run to run by more than its interval says.
"""
import json
import os
import re
import statistics
import sys


def load(folder):
    return {name[:-5]: json.load(open(os.path.join(folder, name)))
            for name in sorted(os.listdir(folder)) if name.endswith(".json")}


def variants(doc):
    return {v["name"]: v for v in doc.get("variants", [])}


def check_names(v):
    # Which timed calls are checked is drawn afresh in every run: those cases are left out; and
    # numbers in a name may follow the run's seed or calibration (lesson 02's sample, lesson
    # 01's steps): they read as '#'.
    return [re.sub(r"[0-9.]+", "#", c.get("case", "")) for c in v.get("checks", [])
            if "timed call" not in c.get("case", "")]


def main(argv):
    move = 0.03
    if "--move" in argv:
        i = argv.index("--move")
        move = float(argv[i + 1]) / 100
        del argv[i:i + 2]
    if len(argv) != 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    before, after = load(argv[1]), load(argv[2])
    different = []
    changes, moved = [], []
    for run in sorted(set(before) | set(after)):
        if run not in before or run not in after:
            different.append(f"{run}: only in {'before' if run in before else 'after'}")
            continue
        b, a = variants(before[run]), variants(after[run])
        if sorted(b) != sorted(a):
            different.append(f"{run}: variants {sorted(b)} -> {sorted(a)}")
        if sorted(before[run].get("metrics", {})) != sorted(after[run].get("metrics", {})):
            different.append(f"{run}: metric names differ")
        print(f"{run}")
        for name in [n for n in b if n in a]:
            vb, va = b[name], a[name]
            if vb.get("correct") != va.get("correct"):
                different.append(f"{run} {name}: correct {vb.get('correct')} -> {va.get('correct')}")
            if check_names(vb) != check_names(va):
                different.append(f"{run} {name}: checks {check_names(vb)} -> {check_names(va)}")
            mb = vb.get("time_ms", {}).get("median")
            ma = va.get("time_ms", {}).get("median")
            if not mb or not ma:
                print(f"  {name:<28} not timed in both")
                continue
            change = ma / mb - 1
            per_byte = vb.get("bytes") != va.get("bytes") and vb.get("bytes") and va.get("bytes")
            if per_byte:  # a size that follows the seed (lesson 02): time per byte instead
                change = (ma / va["bytes"]) / (mb / vb["bytes"]) - 1
            changes.append(abs(change))
            if abs(change) > move:
                moved.append(f"{run} {name} {100 * change:+.1f}%")
            print(f"  {name:<28} {mb:>12.4f} ms {ma:>12.4f} ms {100 * change:>+7.2f}%  "
                  f"right: {vb.get('correct')}/{va.get('correct')}{'  (per byte)' if per_byte else ''}")
        for metric in sorted(set(before[run].get("metrics", {})) & set(after[run].get("metrics", {}))):
            xb = before[run]["metrics"][metric]["value"]
            xa = after[run]["metrics"][metric]["value"]
            print(f"  metric {metric:<21} {xb:>12.4g}    {xa:>12.4g}")
    print()
    if changes:
        print(f"{len(changes)} variant medians: median change {100 * statistics.median(changes):.2f}%, "
              f"{len(moved)} moved by more than {100 * move:g}%")
    for line in moved:
        print(f"  moved: {line}")
    for line in different:
        print(f"  DIFFERENT: {line}")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
