#!/usr/bin/env bash
# The time budget, the table and the log archive of bench/gpu/check.sh
# (bench/gpu/lib/), driven with a fake clock, and check.sh itself rehearsed
# on a machine without a GPU: no payload; a payload whose probe finds no
# device; one whose probe "finds" one and that holds nothing else; a run
# killed part way. No GPU, no build, no real payload.
#
#   check-budget.sh WORKDIR
# Exit status 0 when every check holds; else 1, each failed check named.
set -uo pipefail
work=${1:?usage: check-budget.sh WORKDIR}
gpu=$(cd "$(dirname "$0")/../../bench/gpu" && pwd)
mkdir -p "$work"
failures=0
fail() { echo "check-budget: FAIL: $*"; failures=$((failures + 1)); }
expect_eq() { # WHAT GOT WANT
  [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}
expect_in() { # WHAT FILE PATTERN (grep -E)
  grep -qE -- "$3" "$2" || { fail "$1: no line matching '$3' in $2:"; sed 's/^/    /' "$2"; }
}
expect_not_in() { # WHAT FILE PATTERN
  ! grep -qE -- "$3" "$2" || { fail "$1: a line matches '$3' in $2:"; grep -E -- "$3" "$2" | sed 's/^/    /'; }
}

# shellcheck source=../../bench/gpu/lib/budget.sh
source "$gpu/lib/budget.sh"
# shellcheck source=../../bench/gpu/lib/table.sh
source "$gpu/lib/table.sh"
# shellcheck source=../../bench/gpu/lib/logs.sh
source "$gpu/lib/logs.sh"

# The fake clock: budget_now reads `now`.
now=1000
budget_now() { echo "$now"; }

#===----------------------------------------------------------------------===#
# Grants: min(cap, left - the minimums of the parts still to come).
#===----------------------------------------------------------------------===#
budget_start 100
budget_plan a 10 50
budget_plan b 20 30
budget_plan c 30 40
budget_plan wrap-up 10 10
expect_eq "the sum of the minimums" "$(budget_minimums)" 70

# t=0: 100 left, 20 + 30 + 10 held for b, c and wrap-up: 40, under the cap.
budget_grant a || fail "a was refused: $budget_reason"
expect_eq "a's grant at t=0 (what the later minimums leave)" "$budget_limit" 40
expect_eq "a's cap" "$budget_cap" 50
# t=25: 75 left, 40 held for c and wrap-up: 35 > cap 30.
now=1025
budget_grant b || fail "b was refused: $budget_reason"
expect_eq "b's grant at t=25 (its cap)" "$budget_limit" 30
# t=40: 60 left, 40 held for c and wrap-up: 20, under the cap, at b's minimum.
now=1040
budget_grant b || fail "b was refused at t=40: $budget_reason"
expect_eq "b's grant at t=40 (what the later minimums leave)" "$budget_limit" 20
# t=62: 38 left, 10 held for wrap-up: 28, under c's minimum of 30.
now=1062
rc=0
budget_grant c || rc=$?
expect_eq "c starved: status" "$rc" 1
expect_eq "c starved: reason" "$budget_reason" "time budget spent: needs 30 s, 28 s left"
# Past the end: nothing left, said as 0 s.
now=1200
rc=0
budget_grant c || rc=$?
expect_eq "c after the end: status" "$rc" 1
expect_eq "c after the end: reason" "$budget_reason" "time budget spent: needs 30 s, 0 s left"
# A part that is not in the plan is an error of the check, not a SKIP.
rc=0
budget_grant nowhere || rc=$?
expect_eq "an unplanned part: status" "$rc" 2
# Parts planned before the one that starts hold no time: at t=20, c gets
# 80 - 10 (wrap-up) = 70, capped at 40, whatever a and b took.
budget_start 100
budget_plan a 10 50
budget_plan b 20 30
budget_plan c 30 40
budget_plan wrap-up 10 10
now=1220
budget_grant c || fail "c was refused after a and b were passed by: $budget_reason"
expect_eq "c's grant with a and b passed by" "$budget_limit" 40

#===----------------------------------------------------------------------===#
# Rows as they finish, SKIP for a starved part, the totals.
#===----------------------------------------------------------------------===#
now=1000
budget_start 100
budget_plan a 10 50
budget_plan b 20 30
budget_plan c 40 60
budget_plan d 5 20
table=$work/summary.txt
table_start "$table" "a test table" >"$work/stdout.txt"
expect_in "the title" "$table" '^== a test table$'
now=1004
row a PASS "fine" >>"$work/stdout.txt"
# The row is in the file and on stdout the moment it ends.
expect_in "row a in the table at once" "$table" '^   4s  a +PASS +fine$'
expect_in "row a on stdout at once" "$work/stdout.txt" '^   4s  a +PASS +fine$'
# t=35: 65 left, 45 held for c and d: 20, under b's cap of 30.
now=1035
budget_grant b || fail "b was refused: $budget_reason"
expect_eq "b's grant" "$budget_limit" 20
# b stopped at a grant under its cap: its share ran out, a SKIP.
row_stopped b "logs/b.log" >>"$work/stdout.txt"
expect_in "b stopped below its cap" "$table" '^  35s  b +SKIP +time budget spent: stopped at its share, 20 s of its 30 s cap \(logs/b\.log\)$'
# t=60: 40 left, 5 held for d: 35, under c's minimum of 40.
now=1060
rc=0
budget_grant c || rc=$?
[ "$rc" = 1 ] && row c SKIP "$budget_reason" >>"$work/stdout.txt"
expect_in "c starved: a SKIP row" "$table" '^  60s  c +SKIP +time budget spent: needs 40 s, 35 s left$'
# t=62: 38 left, nothing held after d: its cap of 20. Stopped at its full
# cap it hung: a FAIL naming its log.
now=1062
budget_grant d || fail "d was refused: $budget_reason"
expect_eq "d's grant" "$budget_limit" 20
row_stopped d "logs/d.log" >>"$work/stdout.txt"
expect_in "d stopped at its cap" "$table" '^  62s  d +FAIL +timed out after 20 s \(logs/d\.log\)$'
row e INFO "a number" >>"$work/stdout.txt"
row f BELOW "slower" >>"$work/stdout.txt"
expect_eq "rows so far" "$(grep -c '^ *[0-9]*s  ' "$table")" 6
table_failed || fail "table_failed: no, with a FAIL row"
now=1100
table_totals 1 >>"$work/stdout.txt"
expect_in "the totals" "$table" '^totals: 1 PASS, 1 FAIL, 2 SKIP, 1 INFO, 1 BELOW; 1m40s of a 100 s budget; exit 1$'
expect_eq "the totals are the table's last line" "$(tail -1 "$table" | cut -c1-7)" "totals:"
# The table again, last: stdout ends with the whole file.
expect_eq "the table printed last" "$(tail -n "$(wc -l <"$table")" "$work/stdout.txt")" "$(cat "$table")"

#===----------------------------------------------------------------------===#
# check.sh's plans add up (bench/gpu/lib/parts.sh's arithmetic).
#===----------------------------------------------------------------------===#
(
  unset BITPIPE_CHECK_BUDGET
  # shellcheck source=../../bench/gpu/lib/parts.sh
  source "$gpu/lib/parts.sh"
  check_plan full
  # The minimums leave the script's own start-up (before its first part is
  # granted) 5 s: with none left, a second spent there starved the setup
  # part and failed the rehearsal below on a busy machine.
  expect_eq "full: the budget" "$budget_total" 400
  [ "$(budget_minimums)" -le 395 ] || fail "full: the minimums add up to $(budget_minimums) s, over 400 s less 5 s of slack"
  echo "full: minimums $(budget_minimums) s of $budget_total s"
  check_plan quick
  expect_eq "quick: the budget" "$budget_total" 190
  [ "$(budget_minimums)" -le 185 ] || fail "quick: the minimums add up to $(budget_minimums) s, over 190 s less 5 s of slack"
  echo "quick: minimums $(budget_minimums) s of $budget_total s"
  exit "$failures"
) || failures=$((failures + $?))

#===----------------------------------------------------------------------===#
# The log archive stays under its limit, large logs cut to head and tail.
#===----------------------------------------------------------------------===#
logs_limit=$((1024 * 1024))
mkdir -p "$work/pack/logs/sub"
head -c $((3 * 1024 * 1024)) /dev/urandom >"$work/pack/logs/sub/big.trace.json"
{ echo "the first line"; head -c 600000 /dev/urandom | base64; echo "the last line"; } >"$work/pack/logs/big.log"
echo "small" >"$work/pack/logs/small.log"
logs_pack "$work/pack/logs" "$work/pack/logs.tar.gz" || fail "logs_pack did not get under $logs_limit bytes"
size=$(stat -c %s "$work/pack/logs.tar.gz")
[ "$size" -lt "$logs_limit" ] || fail "logs.tar.gz is $size bytes, over $logs_limit"
expect_eq "the logs cut" "$(printf '%s\n' "${logs_cut[@]}" | sort | tr '\n' ' ')" "logs/big.log logs/sub/big.trace.json "
mkdir -p "$work/pack/unpacked"
tar -C "$work/pack/unpacked" -xzf "$work/pack/logs.tar.gz"
expect_in "a cut log keeps its head" "$work/pack/unpacked/logs/big.log" '^the first line$'
expect_in "a cut log keeps its tail" "$work/pack/unpacked/logs/big.log" '^the last line$'
expect_in "a cut log says so" "$work/pack/unpacked/logs/big.log" '^\[check\.sh: [0-9]+ bytes of this [0-9]+-byte log cut here'
expect_eq "a small log untouched" "$(cat "$work/pack/unpacked/logs/small.log")" small

#===----------------------------------------------------------------------===#
# check.sh rehearsed without a GPU.
#===----------------------------------------------------------------------===#
check() { # NAME ARGS...: check.sh with its output in $work/NAME.{out,err}, OUT=$work/NAME
  local name=$1
  shift
  rm -rf "${work:?}/$name"
  mkdir -p "$work/$name"
  OUT=$work/$name bash "$gpu/check.sh" "$@" >"$work/$name.out" 2>"$work/$name.err"
}
# fake_payload DIR PROBE_SCRIPT [NAME SCRIPT]...: build/gpu-check with stub programs.
fake_payload() {
  local dir=$1
  shift
  rm -rf "$dir" "$dir.stage"
  mkdir -p "$dir" "$dir.stage/bin"
  printf '#!/bin/sh\n%s\n' "$1" >"$dir.stage/bin/bitpipe-gpu-probe"
  shift
  while [ $# -ge 2 ]; do
    printf '#!/bin/sh\n%s\n' "$2" >"$dir.stage/bin/$1"
    shift 2
  done
  chmod +x "$dir.stage"/bin/*
  tar -C "$dir.stage" -cJf "$dir/payload.tar.xz" .
  printf 'bitpipe GPU check folder (a test stub)\ncommit: test\nfiles:\n' >"$dir/MANIFEST.txt"
}

# No payload: exit 2, a clear message, and the row.
rc=0
BITPIPE_GPU_CHECK_DIR=$work/none check no-payload || rc=$?
expect_eq "no payload: exit status" "$rc" 2
expect_in "no payload: the message" "$work/no-payload.err" 'payload\.tar\.xz not found: run bench/gpu/prepare\.sh'
expect_in "no payload: the row" "$work/no-payload/summary.txt" ' payload +FAIL +.*payload\.tar\.xz not found'
# A bad argument: exit 2, the usage.
rc=0
check bad-argument --fast || rc=$?
expect_eq "a bad argument: exit status" "$rc" 2
expect_in "a bad argument: the usage" "$work/bad-argument.err" '^usage: .*--quick'

# No device: one FAIL row that says so and names the log; exit 3.
fake_payload "$work/no-device-bundle" 'echo "no CUDA device: cudaGetDeviceCount returned 0"; exit 1'
rc=0
BITPIPE_GPU_CHECK_DIR=$work/no-device-bundle check no-device || rc=$?
expect_eq "no device: exit status" "$rc" 3
expect_in "no device: the row" "$work/no-device/summary.txt" ' device +FAIL +no CUDA device: cudaGetDeviceCount returned 0 \(logs/probe\.log\)$'
expect_in "no device: the totals" "$work/no-device/summary.txt" '^totals: .* 1 FAIL, .*exit 3$'
expect_in "no device: the row on stdout" "$work/no-device.out" ' device +FAIL +no CUDA device'
if tar -tzf "$work/no-device/logs.tar.gz" >"$work/no-device.tar-list" 2>&1; then
  expect_in "no device: the probe's log comes back" "$work/no-device.tar-list" '^logs/probe\.log$'
else
  fail "no device: no readable logs.tar.gz"
fi

# A "device" and nothing else prepared: every part says so, nothing fails.
fake_payload "$work/stub-bundle" 'echo "Stub GPU, sm_90, 132 SMs, 139.8 GiB"'
for mode in --quick full; do
  args=(--no-torch)
  [ "$mode" = --quick ] && args+=(--quick)
  rc=0
  BITPIPE_GPU_CHECK_DIR=$work/stub-bundle check "stub$mode" "${args[@]}" || rc=$?
  t=$work/stub$mode/summary.txt
  expect_eq "stub device ($mode): exit status" "$rc" 0
  expect_in "stub device ($mode): the device row" "$t" ' device +PASS +Stub GPU, sm_90.*; mpirun: '
  expect_in "stub device ($mode): the GPU tests" "$t" ' GPU tests +SKIP +no test binary prepared'
  expect_in "stub device ($mode): the match" "$t" ' e2e gpt-tiny fp32 +SKIP +not prepared'
  expect_not_in "stub device ($mode): no FAIL row" "$t" '^ *[0-9]+s  .* FAIL '
  expect_in "stub device ($mode): the logs row" "$t" ' logs\.tar\.gz +PASS +[0-9]+ KiB$'
  # Each row printed as it ended, and the whole table again, last.
  expect_eq "stub device ($mode): the device row twice on stdout" "$(grep -c ' device  *PASS ' "$work/stub$mode.out")" 2
done
expect_not_in "quick: no benchmark rows" "$work/stub--quick/summary.txt" 'block|step|killed|nccl rules|memcheck'
expect_in "quick: the mode in the title" "$work/stub--quick/summary.txt" '^== .*: quick, a 190 s budget'
expect_in "full: the benchmark rows" "$work/stubfull/summary.txt" ' r4 killed rank +SKIP +not prepared'
expect_in "full: the mode in the title" "$work/stubfull/summary.txt" '^== .*: full, a 400 s budget'

# Killed part way (as the device tool kills a command that outlives its
# timeout): the rows so far are in summary.txt.
fake_payload "$work/slow-bundle" 'echo "Stub GPU, sm_90"' CudaKernelTests 'exec sleep 60'
rm -rf "$work/killed"
mkdir -p "$work/killed"
OUT=$work/killed BITPIPE_GPU_CHECK_DIR=$work/slow-bundle setsid bash "$gpu/check.sh" --quick \
  >"$work/killed.out" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  grep -q ' device  *PASS ' "$work/killed/summary.txt" 2>/dev/null && break
  sleep 0.2
done
sleep 1
kill -TERM -- -"$pid" 2>/dev/null
wait "$pid" 2>/dev/null
expect_in "killed: the rows so far" "$work/killed/summary.txt" ' device +PASS +Stub GPU'
expect_not_in "killed: no totals" "$work/killed/summary.txt" '^totals:'

if [ "$failures" = 0 ]; then
  echo "check-budget: PASS"
  exit 0
fi
echo "check-budget: $failures check(s) failed"
exit 1
