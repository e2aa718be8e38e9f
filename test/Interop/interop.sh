#!/usr/bin/env bash
# Hugging Face interop against the real transformers (ctest label interop;
# docs/huggingface.md, "Tests"). The other checkpoint tests
# (test/EndToEnd/huggingface.sh) compare with this project's own float64
# re-implementation of Hugging Face's graphs; these load the files into
# transformers itself, from the peer environment (bench/peers/setup.sh,
# installed when missing).
#
#   interop.sh save-hf WORKDIR
#     bitpipe -> transformers. GPT-2 (gpt-tiny), post-LN BERT with the erf
#     GELU (from a Hugging Face config), LLaMA with grouped-query attention
#     and an untied head (llama-tiny) and Mistral (from a Hugging Face
#     MistralConfig): each trains 2 steps on 2 ranks and writes --save-hf;
#     transformers loads the folder (GPT2LMHeadModel, BertForMaskedLM,
#     LlamaForCausalLM, MistralForCausalLM) and its loss on the first
#     step's micro-batches must equal the loss bitpipe computes for the same
#     weights (a run that --loads the folder: its step-1 loss) to 1e-5.
#   interop.sh load-hf WORKDIR
#     transformers -> bitpipe. Random tiny GPT-2, LLaMA (grouped-query,
#     untied), BERT and Mistral made and written by transformers (the
#     Mistral in shards with an index, max_shard_size); bitpipe imports
#     each config.json, compiles, --loads the weights, and its step-1 loss
#     must equal transformers' loss of the same micro-batches to 1e-5.
#
# When the peer environment cannot be installed (no network to PyPI, no
# python3-venv), the test prints why and exits 77, which ctest reports as
# skipped.
# BITPIPE_BIN: the build's bin directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../EndToEnd/common.sh"
repo=$(cd "$here/../.." && pwd)
examples=$repo/examples

[ $# -eq 2 ] || { echo "usage: $0 save-hf|load-hf WORKDIR" >&2; exit 2; }
mode=$1
dir=$2/interop-$mode
rm -rf "$dir" && mkdir -p "$dir"

if ! "$repo/bench/peers/setup.sh" >"$dir/setup.log" 2>&1; then
  why=$(sed -n '/^peers: FAILED/,$p' "$dir/setup.log" | tr '\n' ' ')
  echo "SKIP: the peer environment (bench/peers/setup.sh) could not be installed: ${why:-$(tail -1 "$dir/setup.log")}"
  exit 77
fi
tail -1 "$dir/setup.log"
py=$("$repo/bench/peers/setup.sh" --print-dir)/bin/python
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_PROGRESS_BARS=1
peer() { OMP_NUM_THREADS=1 "$py" -W ignore "$here/hf_peer.py" "$@"; }
data=$(tokens "$2")
n=2 # micro-batches per step

compile() { # CONFIG OUT: 2 ranks, 1F1B
  "$bin/bitpipe-compile" "$1" --devices 2 --schedule 1f1b --microbatches $n -o "$2" >/dev/null
}
# bitpipe_loss EXE FILE: the step-1 loss of a run that starts from FILE.
bitpipe_loss() {
  run 2 "$1" --data "$data" "${base_flags[@]}" --steps 1 --load "$2" --metrics "$1.load.jsonl" >"$1.load.log" 2>&1 ||
    { cat "$1.load.log" >&2; echo "FAIL: $1 --load $2" >&2; exit 1; }
  "$python" -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["loss"])' "$1.load.jsonl"
}
# seq_len / microbatch_size of a bitpipe config.
field() { "$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
# same NAME BITPIPE_LOSS HF_JSON: the two losses within 1e-5, relative.
same() {
  "$python" - "$@" <<'EOF'
import json, sys
name, ours, hf = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])
rel = abs(hf["loss"] - ours) / abs(ours)
print("%-28s bitpipe %.8f  transformers %s %.8f  relative difference %.1e" % (name, ours, hf["class"], hf["loss"], rel))
if not rel <= 1e-5:
    sys.exit("FAIL: %s: the losses differ by %.1e, more than 1e-5" % (name, rel))
EOF
}
# hf_config TYPE OUT: a Hugging Face config.json (transformers' own) of TYPE.
hf_config() { peer make --type "$1" --out "$2" >/dev/null; }

case $mode in
save-hf)
  # Each model: bitpipe's own config, or one imported from a Hugging Face
  # config.json; its class in transformers.
  hf_config bert "$dir/bert-src"
  hf_config mistral "$dir/mistral-src"
  for spec in gpt:"$examples/gpt-tiny.json":auto \
    bert-postln-erf:"$dir/bert-src/config.json":auto \
    llama-gqa-untied:"$examples/llama-tiny.json":auto \
    mistral:"$dir/mistral-src/config.json":mistral; do
    IFS=: read -r name config cls <<<"$spec"
    d=$dir/$name
    mkdir -p "$d"
    case $config in
    */config.json)
      T=32 B=4
      "$bin/bitpipe-import" --config "$config" --seq-len $T --microbatch-size $B -o "$d/model.mlir"
      src=$d/model.mlir
      ;;
    *)
      T=$(field "$config" seq_len) B=$(field "$config" microbatch_size)
      src=$config
      ;;
    esac
    compile "$src" "$d/train"
    run 2 "$d/train" --data "$data" "${base_flags[@]}" --steps 2 --save-hf "$d/hf" >"$d/train.log" 2>&1 ||
      { cat "$d/train.log" >&2; exit 1; }
    ours=$(bitpipe_loss "$d/train" "$d/hf/model.safetensors")
    hf=$(peer loss --hf "$d/hf" --data "$data" --seq-len $T --microbatch-size $B --microbatches $n --seed "$seed" --class "$cls")
    same "$name" "$ours" "$hf"
  done
  ;;
load-hf)
  for spec in gpt2: llama: bert: mistral:40KB; do
    IFS=: read -r type shard <<<"$spec"
    d=$dir/$type
    peer make --type "$type" --out "$d/hf" ${shard:+--max-shard-size "$shard"} --seed 7 >"$d.make.json"
    file=$d/hf/model.safetensors
    if [ -n "$shard" ]; then
      file=$d/hf/model.safetensors.index.json
      [ -f "$file" ] && [ "$(ls "$d"/hf/model-*.safetensors | wc -l)" -ge 2 ] ||
        { echo "FAIL: $type: transformers wrote no shards: $(ls "$d/hf")" >&2; exit 1; }
    fi
    T=32 B=4
    "$bin/bitpipe-import" --config "$d/hf/config.json" --seq-len $T --microbatch-size $B -o "$d/model.mlir"
    compile "$d/model.mlir" "$d/train"
    ours=$(bitpipe_loss "$d/train" "$file")
    hf=$(peer loss --hf "$d/hf" --data "$data" --seq-len $T --microbatch-size $B --microbatches $n --seed "$seed")
    same "$type${shard:+ (shards)}" "$ours" "$hf"
  done
  ;;
*)
  echo "usage: $0 save-hf|load-hf WORKDIR" >&2
  exit 2
  ;;
esac
echo "PASS: interop $mode"
