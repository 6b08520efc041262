#!/usr/bin/env bash
# The out-of-process check of one lesson, end to end on a GPU (lab/record.hpp):
#   1. the solution, run with --record-fd, writes its record;
#   2. the starter (the course's program, no student code) replays it on the same seed: every
#      exercise is right and every entry was asked for;
#   3. one recorded value changed: the replay finds an exercise wrong;
#   4. the record cut after its first check: the replay says what it lacks.
# Usage: replay_check.sh LESSON_BUILD_DIR (holding solution and starter). Exit 77 without a GPU.
set -uo pipefail
dir=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
seed=4242
"$dir/solution" --quick --seed $seed --json "$work/solution.json" --record-fd 5 \
  5> "$work/record.txt" > "$work/solution.log" 2>&1
rc=$?
[ $rc = 77 ] && exit 77
if [ $rc != 0 ]; then cat "$work/solution.log"; echo "the solution failed (exit $rc)"; exit 1; fi

replay() {  # replay NAME RECORD: the starter judges the record; its result in NAME.json
  "$dir/starter" --quick --seed $seed --json "$work/$1.json" --replay "$2" > "$work/$1.log" 2>&1
  [ -s "$work/$1.json" ] || { cat "$work/$1.log"; echo "the replay ($1) wrote no result"; exit 1; }
}
verdict() {  # verdict NAME: "right|wrong entries used missing" of a replay's result
  python3 - "$work/$1.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ex = [v for v in r["variants"] if v["role"] == "exercise"]
right = all(v["correct"] for v in ex) and all(v["checks"] for v in ex)
p = r["replay"]
print("right" if right else "wrong", p["entries"], p["used"], len(p["missing"]), p["error"] or "-")
PY
}

replay as-recorded "$work/record.txt"
read -r got entries used missing error <<< "$(verdict as-recorded)"
echo "as recorded: $got, $entries entries, $used used, $missing missing, error $error"
if [ "$got" != right ] || [ "$entries" = 0 ] || [ "$used" != "$entries" ] || [ "$missing" != 0 ]; then
  cat "$work/as-recorded.log"; echo "FAIL: the solution's own record must replay right, whole"; exit 1
fi

# One value of the first check changed to one no tolerance accepts.
awk 'done != 1 && prev ~ /^check\t/ { sub(/:[^ ]+/, ":0x1.8p+99"); done = 1 } { print; prev = $0 }' \
  "$work/record.txt" > "$work/changed.txt"
replay changed "$work/changed.txt"
read -r got _ <<< "$(verdict changed)"
echo "one value changed: $got"
[ "$got" = wrong ] || { cat "$work/changed.log"; echo "FAIL: a changed value must be found"; exit 1; }

head -n 2 "$work/record.txt" > "$work/cut.txt"
replay cut "$work/cut.txt"
read -r got _ _ missing _ <<< "$(verdict cut)"
echo "cut after its first check: $got, $missing missing"
if [ "$got" != wrong ] || [ "$missing" = 0 ]; then
  cat "$work/cut.log"; echo "FAIL: a cut record must leave checks missing"; exit 1
fi
echo "ok"
