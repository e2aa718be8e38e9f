#!/usr/bin/env bash
# Did a change make the compiler slower? Times the same compiler work with
# two builds, alternating run by run so that both see the same machine
# load, and prints each case's median seconds and the new/old ratio.
#
#   bench/compare-builds.sh OLD_BIN NEW_BIN [RUNS]      (default 5 runs)
#
# OLD_BIN, NEW_BIN: bin directories of two builds (e.g. a clone of the
# commit before the change, built with scripts/build.sh). Cases: the pass
# pipeline on GPT-96 (bitpipe-opt --bitpipe-pipeline; D=8, N=32, dp 1 and
# 4) and whole compiles to an executable (bitpipe-compile: gpt-tiny BitPipe
# D=4 N=8; GPT-96 BitPipe D=8 N=32).
set -euo pipefail
old=$1 new=$2 runs=${3:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Each build imports the model itself: the IR's spelling may differ between
# the two (a model file of one build need not parse in the other).
"$old/bitpipe-import" gpt --config "$root/examples/gpt-96.json" -o "$work/gpt96.old.mlir"
"$new/bitpipe-import" gpt --config "$root/examples/gpt-96.json" -o "$work/gpt96.new.mlir"

cases=(
  "pipeline gpt-96 D=8 N=32|bitpipe-opt $work/gpt96.SIDE.mlir --bitpipe-pipeline=devices=8 microbatches=32 schedule=bitpipe -o $work/out.mlir"
  "pipeline gpt-96 D=8 N=32 dp=4|bitpipe-opt $work/gpt96.SIDE.mlir --bitpipe-pipeline=devices=8 microbatches=32 schedule=bitpipe dp=4 -o $work/out.mlir"
  "compile gpt-tiny D=4 N=8|bitpipe-compile $root/examples/gpt-tiny.json --devices 4 --schedule bitpipe --microbatches 8 -o $work/exe"
  "compile gpt-96 D=8 N=32|bitpipe-compile $root/examples/gpt-96.json --devices 8 --schedule bitpipe --microbatches 32 -o $work/exe"
)

# seconds BIN COMMAND...: wall time of one run.
seconds() {
  local bin=$1 tool=$2
  shift 2
  local start end
  start=$(date +%s%N)
  "$bin/$tool" "$@" >/dev/null
  end=$(date +%s%N)
  awk -v ns=$((end - start)) 'BEGIN {printf "%.4f\n", ns / 1e9}'
}

median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

printf '| case | old (s) | new (s) | new / old |\n|---|---|---|---|\n'
for c in "${cases[@]}"; do
  name=${c%%|*} cmd=${c#*|}
  # The pipeline option is one argument with spaces: split on ' -o ' etc.
  read -r tool rest <<<"$cmd"
  args=()
  if [[ $rest == *--bitpipe-pipeline=* ]]; then
    input=${rest%% *}
    opt=${rest#* }; opt=${opt% -o *}
    args=("$input" "$opt" -o "${rest##* }")
  else
    read -r -a args <<<"$rest"
  fi
  : >"$work/old.t"; : >"$work/new.t"
  for ((i = 0; i < runs; ++i)); do
    seconds "$old" "$tool" "${args[@]//SIDE/old}" >>"$work/old.t"
    seconds "$new" "$tool" "${args[@]//SIDE/new}" >>"$work/new.t"
  done
  o=$(median <"$work/old.t") n=$(median <"$work/new.t")
  awk -v name="$name" -v o="$o" -v n="$n" \
    'BEGIN {printf "| %s | %.3f | %.3f | %.2f |\n", name, o, n, n / o}'
done
