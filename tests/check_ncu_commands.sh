#!/usr/bin/env bash
# scripts/check-ncu-commands.sh, with a stand-in for ncu (no GPU here): a block passes only when
# each of its ncu commands exits 0 and profiled a kernel its --kernel-name selects; the slides'
# blocks are run too.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
# The stand-in profiles one kernel: the one --kernel-name names (regex: its pattern's first
# word), "other_kernel" when FAKE=wrong, none when FAKE=none; it exits 1 when FAKE=exit. Like
# the real one, reading a report (--import) profiles nothing: it prints a table (nothing when
# FAKE=empty_import).
cat > "$work/bin/ncu" <<'FAKE'
#!/usr/bin/env bash
[ "${1:-}" = --version ] && { echo "fake ncu"; exit 0; }
# A file no block names, written in the working folder meanwhile (as an editor might): it stays.
[ "${FAKE:-}" = right ] && : > lab-test-not-a-blocks-file.tmp
name=some_kernel prev=""
for a in "$@"; do
  [ "$prev" = --kernel-name ] && name=$a
  if [ "$a" = --import ]; then
    [ "${FAKE:-}" = empty_import ] || echo '"Address","Source"'
    exit 0
  fi
  prev=$a
done
name=${name#regex:}
name=${name%%|*}
case ${FAKE:-} in
  wrong) name=other_kernel ;;
  none) exit 0 ;;
  exit) echo '==PROF== Profiling "x": 0%'; exit 1 ;;
esac
echo "==PROF== Profiling \"$name\": 0%....50%....100% - 1 pass"
FAKE
chmod +x "$work/bin/ncu"
check() { PATH="$work/bin:$PATH" FAKE=$1 LESSONS="04 06 10 11" "$repo/scripts/check-ncu-commands.sh" "$work/$1" > "$work/$1.out" 2>&1; }

root_before=$(ls -A "$repo")
check right || { echo "blocks failed with the right kernels profiled:"; cat "$work/right.out"; exit 1; }
# what the blocks wrote in the repository's root (lesson 10's column_stats.csv) is gone again;
# a file no block names is left alone
[ -e "$repo/lab-test-not-a-blocks-file.tmp" ] || { echo "the check removed a file no block wrote"; exit 1; }
rm -f "$repo/lab-test-not-a-blocks-file.tmp"
[ "$(ls -A "$repo")" = "$root_before" ] || { echo "the check left files in $repo"; exit 1; }
grep -q "^ok    slides/04-coalescing.md block" "$work/right/ncu-commands.txt" || { echo "the slides were not run"; exit 1; }
grep -q "^ok    lessons/11-one-time-costs/README.md block" "$work/right/ncu-commands.txt"
if grep -q FAIL "$work/right/ncu-commands.txt"; then echo "a FAIL with the right kernels"; exit 1; fi

grep -q "^ok    lessons/10-profiling/README.md block 05" "$work/right/ncu-commands.txt" ||
  { echo "the block that reads a saved report (--import, into a file) failed"; exit 1; }

if check empty_import; then echo "blocks passed with a report read that printed nothing"; exit 1; fi
grep -q "CHECK FAILED: ncu --import printed nothing" "$work/empty_import/ncu-commands.txt"
if check wrong; then echo "blocks passed with the wrong kernel profiled"; exit 1; fi
grep -q "CHECK FAILED: no kernel named by 'regex:gemv' was profiled (profiled: other_kernel)" "$work/wrong/ncu-commands.txt"
if check none; then echo "blocks passed with no kernel profiled"; exit 1; fi
grep -q "CHECK FAILED: ncu profiled no kernel" "$work/none/ncu-commands.txt"
if check exit; then echo "blocks passed when ncu failed"; exit 1; fi
grep -q "CHECK FAILED: ncu exited with 1" "$work/exit/ncu-commands.txt"
if grep -q "^ok" "$work/exit/ncu-commands.txt"; then echo "a block passed when ncu failed"; exit 1; fi
echo "check-ncu-commands: ok"
