#!/bin/sh
# expect-abort.sh MAX_SECONDS REGEX COMMAND...
#
# Runs COMMAND under `timeout 60` and passes only if it exits non-zero (and
# not by the timeout, which would mean a hang), within MAX_SECONDS, with
# REGEX (grep -E) somewhere in its output. Used by the dead-peer tests.
max="$1"; regex="$2"; shift 2
out=$(mktemp)
start=$(date +%s)
timeout 60 "$@" >"$out" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
cat "$out"
echo "expect-abort: exit code $rc after ${elapsed} s"
fail=0
if [ "$rc" -eq 0 ]; then echo "expect-abort: FAIL: exited 0"; fail=1; fi
if [ "$rc" -eq 124 ]; then echo "expect-abort: FAIL: hung until timeout 60"; fail=1; fi
if [ "$elapsed" -gt "$max" ]; then echo "expect-abort: FAIL: took ${elapsed} s > ${max} s"; fail=1; fi
if ! grep -Eq -- "$regex" "$out"; then echo "expect-abort: FAIL: no line matches /$regex/"; fail=1; fi
rm -f "$out"
exit $fail
