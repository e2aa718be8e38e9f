#!/usr/bin/env bash
# The kernel profile (docs/launching.md, "Profiling a step"):
#   - --profile prints one table per rank, steps 2-N, with the kernels a
#     GPT stage calls, the calls per step as the program makes them (one
#     attention backward per layer and micro-batch), an "all kernels" line
#     and what is left outside them;
#   - profiling changes nothing of the training: the same losses and the
#     same weights, bit for bit, as a run without it.
#
#   profile.sh MODEL SCHEDULE D N WORKDIR
# BITPIPE_BIN: the build's bin directory.
set -euo pipefail
source "$(dirname "$0")/common.sh"
[ $# -eq 5 ] || { echo "usage: $0 MODEL SCHEDULE D N WORKDIR" >&2; exit 2; }
model=$1 schedule=$2 d=$3 n=$4 work=$5
name=$(basename "$model" .json)
dir=$work/profile-$name-$schedule-d$d-n$n
rm -rf "$dir" && mkdir -p "$dir"
data=$(tokens "$work")
"$bin/bitpipe-compile" "$model" --devices "$d" --schedule "$schedule" \
  --microbatches "$n" -o "$dir/exe"
flags=(--data "$data" "${base_flags[@]}" --steps 3)

run "$d" "$dir/exe" "${flags[@]}" --metrics "$dir/plain.jsonl" \
  --save "$dir/plain.safetensors" >/dev/null
run "$d" "$dir/exe" "${flags[@]}" --profile --metrics "$dir/profiled.jsonl" \
  --save "$dir/profiled.safetensors" | tee "$dir/profiled.log"

fail() { echo "profile: $1 (see $dir/profiled.log)" >&2; exit 1; }
for ((r = 0; r < d; r++)); do
  grep -q "^bitpipe: kernel profile, rank $r, per step (steps 2-3; step [0-9.]* s):$" \
    "$dir/profiled.log" || fail "no table for rank $r"
done
# Every layer runs one attention backward per micro-batch: the ranks'
# calls per step add up to layers x micro-batches. (Not the forward, which
# the backward runs again for the statistics the forward does not keep.)
layers=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"])' "$model")
calls=$(awk '$1 == "attention_bwd" { s += $2 } END { print s + 0 }' "$dir/profiled.log")
[ "$calls" = $((layers * n)) ] ||
  fail "attention_bwd: $calls calls per step over the ranks, expected $((layers * n))"
# Each table adds up: its rows to its "all kernels" line (less the kernels
# past the top ones), which is no more than the step.
"$python" - "$dir/profiled.log" <<'PY' || fail "a table does not add up"
import re, sys
tables = re.split(r"^bitpipe: kernel profile, ", open(sys.argv[1]).read(), flags=re.M)[1:]
for table in tables:
    step_ms = float(re.search(r"step ([0-9.]+) s\)", table).group(1)) * 1e3
    rows, total, more = 0.0, None, False
    for line in table.splitlines()[2:]:
        more |= line.startswith("  (")
        f = line.split()
        if line.startswith("  all kernels"):
            total = float(f[3])
            break
        if len(f) == 5 and not line.startswith("  ("):
            rows += float(f[2])
    assert total is not None, "no 'all kernels' line"
    # The rows are rounded to 0.1 ms; a table of the top kernels only
    # leaves some out.
    assert rows <= total + 1.6 and (more or rows >= total - 1.6), (rows, total)
    assert 0 < total <= step_ms * 1.01, (total, step_ms)
    assert re.search(r"^  outside kernels +[0-9.]+ ", table, re.M), "no 'outside kernels'"
PY

"$bin/bitpipe-compare" --rtol 0 --metrics "$dir/profiled.jsonl" "$dir/plain.jsonl"
"$bin/bitpipe-compare" --rtol 0 --reference "$dir/plain.safetensors" \
  "$dir/profiled.safetensors"
echo "profile: ok"
