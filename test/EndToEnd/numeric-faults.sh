#!/usr/bin/env bash
# Numeric faults of a compiled executable (gpt-tiny, BitPipe, 2 ranks; both
# ranks hold every parameter, so both load and check all of them):
# docs/training-semantics.md, "Non-finite values", and docs/runtime-abi.md,
# "Checkpoints". A checkpoint with a NaN weight, a NaN moment, a negative
# second moment, a step beyond 2^62 or a flipped data byte is refused at
# load on every rank; --lr 1e30 stops training at the step whose loss or
# gradient norm is non-finite. Each ends with its message, a non-zero exit
# of the job and of every rank on its own, and an existing --save file
# byte-identical afterwards.
#
#   numeric-faults.sh WORKDIR   (BITPIPE_BIN: the build's bin directory;
#                                BITPIPE_PYTHON: a python3)
set -uo pipefail
bin=${BITPIPE_BIN:?set BITPIPE_BIN to the bin directory of the build}
python=${BITPIPE_PYTHON:-python3}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$1/numeric-faults
rm -rf "$work" && mkdir -p "$work"
source "$root/test/EndToEnd/fault-helpers.sh"
spoil=("$python" "$root/test/EndToEnd/spoil-checkpoint.py")

set -e
"$bin/bitpipe-tokenize" -o "$work/tokens.bin" /usr/share/common-licenses/* >/dev/null
"$bin/bitpipe-compile" "$root/examples/gpt-tiny.json" --devices 2 \
  --schedule bitpipe --microbatches 4 -o "$work/gpt"
run=(mpirun "${mpirun_flags[@]}" -np 2)
flags=(--data "$work/tokens.bin" --seed 7 --lr 1e-3 --timeout 60)
# A good checkpoint, and a --save target that no failed run may touch.
"${run[@]}" "$work/gpt" "${flags[@]}" --steps 1 --save "$work/good.safetensors" >/dev/null
cp "$work/good.safetensors" "$work/keep.safetensors"
# It loads and trains on (the checksums and values of a good file pass).
"${run[@]}" "$work/gpt" "${flags[@]}" --steps 2 --load "$work/good.safetensors" >"$work/resume.log" 2>&1
# A small tensor of gpt-tiny: the spoiler rewrites its data and checksum.
tensor=final_ln.bias
"${spoil[@]}" "$work/good.safetensors" "$work/nan-weight.safetensors" nan-weight $tensor
"${spoil[@]}" "$work/good.safetensors" "$work/inf-weight.safetensors" inf-weight $tensor
"${spoil[@]}" "$work/good.safetensors" "$work/nan-moment.safetensors" nan-moment $tensor
"${spoil[@]}" "$work/good.safetensors" "$work/negative-v.safetensors" negative-v $tensor
"${spoil[@]}" "$work/good.safetensors" "$work/huge-step.safetensors" step 9223372036854775808
"${spoil[@]}" "$work/good.safetensors" "$work/wrapped-step.safetensors" step 18446744073709551615
"${spoil[@]}" "$work/good.safetensors" "$work/flipped.safetensors" flip-byte $tensor
set +e

load_fails() { # NAME MESSAGE-REGEX: --load NAME.safetensors is refused
  local name=$1 message=$2
  expect_failure "load-$name" 2 \
    "bitpipe: rank 0: error: --load: checkpoint '$w/$name\.safetensors': $message" \
    "$work/gpt" "${flags[@]}" --steps 2 --load "$work/$name.safetensors" \
    --save "$work/keep.safetensors"
}
load_fails nan-weight "tensor '$tensor' element 0 is nan, expected a finite value"
load_fails inf-weight "tensor '$tensor' element 0 is inf, expected a finite value"
load_fails nan-moment "tensor 'optim\.m\.$tensor' element 0 is nan, expected a finite value"
load_fails negative-v "tensor 'optim\.v\.$tensor' element 0 is -1, expected a finite value >= 0 \(a second moment\)"
load_fails huge-step "__metadata__ step '9223372036854775808' is not a decimal integer in \[0, 2\^62\]"
load_fails wrapped-step "__metadata__ step '18446744073709551615' is not a decimal integer in \[0, 2\^62\]"
load_fails flipped "tensor '$tensor' fails its CRC-32C check \(stored [0-9a-f]{8}, computed [0-9a-f]{8}\): the file is corrupt"

# --lr 1e30: the first update sends the weights to about 1e31 (finite);
# the second step's forward overflows, so its loss and gradient norm are
# non-finite, and training stops there.
expect_failure lr-1e30 2 \
  "bitpipe: rank 0: error: step 2: the loss is not finite and the global gradient norm is -?nan; the first parameter \(in model order\) that went non-finite is 'embed\.tokens' \(tensor 'embed\.tokens' element [0-9]+ is -?nan, expected a finite value\); training stops: nothing is saved, an existing --save file is left as it was" \
  "$work/gpt" "${flags[@]}" --lr 1e30 --steps 5 --save "$work/keep.safetensors"
# --lr 1e38: the first update itself overflows (lr / (1 - beta1) is beyond
# float), with step 1's loss and norm still finite: the periodic save after
# it is what refuses.
expect_failure lr-1e38-save-every 2 \
  "bitpipe: rank 0: error: --save: checkpoint '$w/keep\.safetensors' \(step 1\): refusing to save: tensor 'embed\.tokens' element [0-9]+ is -?(nan|inf), expected a finite value; the file was not written" \
  "$work/gpt" "${flags[@]}" --lr 1e38 --steps 5 --save-every 1 --save "$work/keep.safetensors"
# And without a save to refuse it, the last update's overflow still fails
# the run.
expect_failure lr-1e38-last-step 2 \
  "bitpipe: rank 0: error: step 1: the update made the parameters non-finite; the first parameter \(in model order\) that went non-finite is 'embed\.tokens' \(tensor 'embed\.tokens' element [0-9]+ is -?(nan|inf), expected a finite value\); training stops: nothing is saved, an existing --save file is left as it was" \
  "$work/gpt" "${flags[@]}" --lr 1e38 --steps 1

if cmp -s "$work/good.safetensors" "$work/keep.safetensors"; then
  echo "ok   nothing-overwritten: keep.safetensors unchanged"
else
  fail nothing-overwritten "keep.safetensors changed"
fi
if ls "$work" | grep -q '\.tmp'; then
  fail no-temporaries "a temporary file was left: $(ls "$work" | grep '\.tmp')"
fi

echo "numeric-faults: $failures failure(s)"
[ $failures -eq 0 ]
