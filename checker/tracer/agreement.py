#!/usr/bin/env python3
"""How the tracer's times compare with the reported ones, and what tracing costs (on a GPU).

  agreement.py RUN.json
      RUN.json: `lab-check run --build solution --format json --report` (or a grade record,
      result.json). One line per variant of every lesson and run: the reported median, the traced
      one, their difference, the accepted range and the sample counts.
  agreement.py --cost TRACED.json UNTRACED.json
      Two result files of one lesson program (--json), run with and without the tracer
      (CUDA_INJECTION64_PATH and LAB_TRACE_FILE set, or not): each variant's median in both and
      their ratio, which is what tracing costs that variant; then each metric of the lesson in
      both (lesson 09's host share, for one, is a ratio of host to GPU time).
"""
import json
import sys


def agreement(path):
    doc = json.load(open(path))
    print(f"{'lesson':<20} {'run':>3} {'state':<11} {'variant':<22} {'reported':>12} {'traced':>12} "
          f"{'diff':>7} {'accepted':>25} {'samples':>9}")
    for lesson in doc["lessons"]:
        for run, c in enumerate(lesson.get("corroboration", []), 1):
            if not c.get("variants"):
                print(f"{lesson['lesson']:<20} {run:>3} {c['state']:<11} {c.get('message', '')}")
            for v in c.get("variants", []):
                diff = f"{100 * v['difference']:+.2f}%" if "difference" in v else "-"
                print(f"{lesson['lesson']:<20} {run:>3} {c['state']:<11} {v['name']:<22} "
                      f"{v['reported_ms']:>9.4f} ms {v['traced_ms']:>9.4f} ms {diff:>7} "
                      f"{v['low_ms']:>10.4f} to {v['high_ms']:.4f} ms "
                      f"{v['reported_samples']:>4}/{v['traced_samples']:<4}"
                      + (f"  {v['problem']}" if "problem" in v else ""))


def cost(traced_path, untraced_path):
    medians, metrics = [], []
    for path in (traced_path, untraced_path):
        doc = json.load(open(path))
        medians.append({v["name"]: v["time_ms"]["median"] for v in doc["variants"] if "time_ms" in v})
        metrics.append({k: m["value"] for k, m in doc.get("metrics", {}).items()})
    print(f"{'variant':<22} {'traced':>12} {'untraced':>12} {'ratio':>7}")
    for name, t in medians[0].items():
        u = medians[1].get(name)
        if u:
            print(f"{name:<22} {t:>9.4f} ms {u:>9.4f} ms {t / u:>7.3f}")
    for name, t in metrics[0].items():
        u = metrics[1].get(name)
        if u is not None:
            print(f"metric {name:<30} traced {t:.4g}, untraced {u:.4g}")


if __name__ == "__main__":
    if len(sys.argv) == 2:
        agreement(sys.argv[1])
    elif len(sys.argv) == 4 and sys.argv[1] == "--cost":
        cost(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
