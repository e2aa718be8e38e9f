#!/usr/bin/env bash
# The mutation driver's own test: on each way a target can fail
# (SelfTestTarget.cpp) it must die of the signal, save the input under
# --crash-dir with the kind in the name, and say so; on inputs the target
# refuses it must finish and exit 0; mutants must reach a failure one bit
# away, at the same run for the same seed. (docs/robustness.md)
#
#   driver-selftest.sh BIN WORKDIR
set -uo pipefail
exe=$1/bitpipe-fuzz-selftest
work=$2/fuzz-selftest
rm -rf "$work" && mkdir -p "$work/in" "$work/crashes"
failures=0
fail() { echo "FAIL $1"; failures=$((failures + 1)); }

for kind in abort:abort segv:segv deep:segv hang:hang finding:abort; do
  word=${kind%%:*} saved=${kind##*:}
  printf '%s and the rest' "$word" >"$work/in/$word"
  "$exe" --replay "$work/in/$word" --timeout 2 --crash-dir "$work/crashes" \
    >"$work/$word.log" 2>&1
  rc=$?
  file=$work/crashes/$saved-bitpipe-fuzz-selftest-$word
  if [ $rc -lt 128 ]; then
    fail "$word: exit $rc, expected death by a signal"
  elif ! cmp -s "$file" "$work/in/$word"; then
    fail "$word: the input was not saved as $file"
  elif ! grep -q "saved to $file" "$work/$word.log"; then
    fail "$word: the report does not name $file"
  else
    echo "ok   $word: signal $((rc - 128)), saved to $(basename "$file")"
  fi
done

# Mutants of "segw" reach "segv" by one bit flip: the driver must find it,
# at the same run both times (the seed names the inputs).
printf 'segw' >"$work/in/near"
found() {
  rm -rf "$work/found" && mkdir "$work/found"
  "$exe" --seed 3 --runs 100000 --corpus "$work/in/near" \
    --crash-dir "$work/found" >/dev/null 2>&1
  ls "$work/found"
}
first=$(found) second=$(found)
if [[ "$first" == segv-bitpipe-fuzz-selftest-seed3-run* ]] &&
  [ "$first" = "$second" ]; then
  echo "ok   mutants: found 'segv' from 'segw' at the same run twice: $first"
else
  fail "mutants: found '$first', then '$second'"
fi

printf 'refused' >"$work/in/refused"
out=$("$exe" --seed 5 --runs 300 --corpus "$work/in/refused" \
  --crash-dir "$work/crashes" 2>&1)
if [ $? -eq 0 ] && [[ "$out" == *"300 mutants"*"no crash, no hang" ]]; then
  echo "ok   refused inputs: exit 0: $out"
else
  fail "refused inputs: $out"
fi
exit $((failures > 0))
