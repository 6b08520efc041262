#!/usr/bin/env python3
"""scripts/harness-share.py's classifier on a tiny harness whose every line's class is known."""
import importlib.util
import pathlib
import subprocess
import sys
import tempfile

root = pathlib.Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("harness_share", root / "scripts" / "harness-share.py")
share = importlib.util.module_from_spec(spec)
spec.loader.exec_module(share)

fixture = root / "tests" / "fixtures" / "harness-share" / "tiny.cu"
lines, classes = share.classify(fixture, {})
want = {
    "// Doubles x.": "T",                            # a kernel and its comment teach
    "  if (i < n) x[i] *= 2.0f;": "T",
    "float start_value(int i) { return 0.5f * i; }": "P",  # used by the check only
    "bool check_output(const std::vector<float>& got) {": "P",  # a plumbing-only function...
    "    if (got[i] != 2.0f * start_value(i)) return false;": "P",  # ... all of it
    '  lesson.option("--n", &n, "floats");': "P",    # argument handling
    "    if (l.profiling()) return;": "P",           # the profile branch
    '    l.size(std::to_string(n) + " floats");': "T",  # the problem's size
    "    twice<<<1, 1024>>>(nullptr, static_cast<int>(n));": "T",  # the launch
    '    if (!l.profiling()) l.note("demonstration");': "T",  # a demonstration, not a guard
    "#include \"lab/lesson.cuh\"": "",                # neutral
    "}  // namespace": "",
    "": "",
}
failures = []
for line, cls in zip(lines, classes):
    if line in want and want[line] != cls:
        failures.append(f"{line!r}: {cls or 'neutral'}, want {want[line] or 'neutral'}")
missing = set(want) - set(lines)
if missing:
    failures.append(f"the fixture lacks {sorted(missing)}")

# An override by name wins over the rules, and the table needs a reason for each entry.
lines, classes = share.classify(fixture, {"twice": "P"})
if classes[lines.index("  if (i < n) x[i] *= 2.0f;")] != "P":
    failures.append("an override to plumbing left the kernel twice as teaching")
with tempfile.TemporaryDirectory() as d:
    table = pathlib.Path(d) / "t.toml"
    table.write_text('[[override]]\nlesson = "tiny"\nname = "twice"\nclass = "plumbing"\n')
    run = subprocess.run([sys.executable, root / "scripts" / "harness-share.py", "--table", table,
                          fixture], capture_output=True, text=True)
    if run.returncode == 0 or "needs class" not in run.stderr:
        failures.append(f"an override without a reason was accepted: {run.stdout}{run.stderr}")
    # --check names the harness over the bar and exits 1; under it, 0.
    table.write_text("")
    run = subprocess.run([sys.executable, root / "scripts" / "harness-share.py", "--table", table,
                          "--check", "0.25", fixture], capture_output=True, text=True)
    if run.returncode != 1 or "over the bar of 25% plumbing: tiny (" not in run.stdout:
        failures.append(f"--check 0.25 on tiny: exit {run.returncode}, {run.stdout}")
    run = subprocess.run([sys.executable, root / "scripts" / "harness-share.py", "--table", table,
                          "--check", "0.9", fixture], capture_output=True, text=True)
    if run.returncode != 0:
        failures.append(f"--check 0.9 on tiny: exit {run.returncode}, {run.stdout}")

for f in failures:
    print("FAIL:", f)
print("harness-share classifier:", "failed" if failures else "ok")
sys.exit(1 if failures else 0)
