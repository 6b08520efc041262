#!/usr/bin/env bash
# Lists the tests CTest did not run, each with its reason, from CTest's JUnit file:
#
#   scripts/skipped-tests.sh build/ci/junit.xml
#
# prints "  <test>  <reason>" per skipped or disabled test (nothing if none). CTest's own summary
# names them but not why; the reason is the test's last line of output ("no usable CUDA device
# (...); skipping (exit 77)" for a GPU test on a machine without one), else CTest's skip message.
# .ci/run calls it after the tests; tests/skipped_tests.cmake checks it on a real CTest run.
set -euo pipefail
junit="${1:?usage: scripts/skipped-tests.sh JUNIT.xml}"
[[ -f "$junit" ]] || { echo "skipped-tests: $junit does not exist" >&2; exit 2; }
awk '
  function unescape(s) {
    gsub(/&lt;/, "<", s); gsub(/&gt;/, ">", s); gsub(/&quot;/, "\"", s); gsub(/&apos;/, "\047", s)
    gsub(/&amp;/, "\\&", s); return s
  }
  /<testcase / {
    name = $0; sub(/.*<testcase name="/, "", name); sub(/".*/, "", name)
    status = $0; sub(/.* status="/, "", status); sub(/".*/, "", status)
    why = ""; last = ""; inout = 0
  }
  /<skipped message="/ { why = $0; sub(/.*<skipped message="/, "", why); sub(/".*/, "", why) }
  {
    line = $0
    if (line ~ /<system-out>/) { inout = 1; sub(/.*<system-out>/, "", line) }
    if (inout) {
      done = line ~ /<\/system-out>/
      sub(/<\/system-out>.*/, "", line)
      gsub(/^[ \t]+|[ \t]+$/, "", line)
      if (line != "") last = line
      if (done) inout = 0
    }
  }
  /<\/testcase>/ && (status == "notrun" || status == "disabled") {
    reason = last != "" ? unescape(last) : (why != "" ? why : status)
    sub(/^\/[^ :]*: /, "", reason)  # the program path in front of its own message
    printf "  %-34s %s\n", name, reason
  }' "$junit"
