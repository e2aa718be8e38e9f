#!/usr/bin/env bash
# Training on subword tokens (docs/data.md): the license texts through a
# Hugging Face byte-level BPE tokenizer (test/Tools/Inputs, 320 ids), a GPT
# whose vocabulary holds them trained on 2 ranks, the loss falling; a model
# whose vocabulary is smaller refuses the file at start-up, naming it.
#
#   subword-tokens.sh WORKDIR
# BITPIPE_BIN: the build's bin directory; BITPIPE_PYTHON: python3.
set -euo pipefail
source "$(dirname "$0")/common.sh"
[ $# -eq 1 ] || { echo "usage: $0 WORKDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
dir=$1/subword-tokens
rm -rf "$dir" && mkdir -p "$dir"
tokenizer=$here/../Tools/Inputs/bpe-320.tokenizer.json
"$bin/bitpipe-tokenize" --tokenizer "$tokenizer" --vocab 320 \
  -o "$dir/tokens.bin" /usr/share/common-licenses/*
# gpt-tiny with the tokenizer's vocabulary.
"$python" -c "import json, sys; c = json.load(open(sys.argv[1])); c['vocab'] = 320; c['name'] = 'gpt_tiny_bpe'; json.dump(c, open(sys.argv[2], 'w'))" \
  "$here/../../examples/gpt-tiny.json" "$dir/gpt-tiny-bpe.json"
"$bin/bitpipe-compile" "$dir/gpt-tiny-bpe.json" --devices 2 --schedule bitpipe \
  --microbatches 4 -o "$dir/train"
run 2 "$dir/train" --data "$dir/tokens.bin" "${base_flags[@]}" --steps 6 \
  --metrics "$dir/metrics.jsonl" >/dev/null
"$python" - "$dir/metrics.jsonl" <<'PY'
import json, sys
losses = [json.loads(line)["loss"] for line in open(sys.argv[1])]
if not losses[-1] < losses[0]:
    sys.exit(f"subword-tokens: the loss did not fall: {losses}")
print(f"subword-tokens: loss {losses[0]:.4f} -> {losses[-1]:.4f}")
PY
# The byte model (vocab 256) refuses ids beyond its embedding.
"$bin/bitpipe-compile" "$here/../../examples/gpt-tiny.json" --devices 1 \
  --schedule gpipe --microbatches 2 -o "$dir/bytes"
if run 1 "$dir/bytes" --data "$dir/tokens.bin" "${base_flags[@]}" --steps 1 \
  >"$dir/refused.log" 2>&1; then
  echo "subword-tokens: a vocab-256 model trained on 320 ids" >&2
  exit 1
fi
grep -q "is not below the vocabulary size 256" "$dir/refused.log" || {
  cat "$dir/refused.log"
  echo "subword-tokens: the refusal does not name the vocabulary" >&2
  exit 1
}
echo "subword-tokens: ok"
