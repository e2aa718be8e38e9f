#!/usr/bin/env bash
# run.sh: bitpipe's compiled one-rank training step next to PyTorch's on the
# same model, weights, data and update.
#
#   bench/peers/run.sh [--bin DIR] [--out DIR] [--steps K] [--rounds R]
#                      [--models LIST] [--schedule S] [--threads2]
#                      [--cold-compile]
#                      [--lr X] [--weight-decay X] [--max-grad-norm X]
#                      [--seed N] [--sampling random|sequential]
#     --bin DIR        bitpipe's tools and runtime (default: $BITPIPE_BIN, else
#                      the repository's build/bin)
#     --out DIR        work folder (default /tmp/bitpipe-peers); replaced
#     --steps K        steps per run (default 12; at least 10: step 10's
#                      losses are compared)
#     --rounds R       runs of each of the three per model, alternating
#                      bitpipe, eager, compiled, R times (default 1)
#     --models LIST    space-separated NAME:CONFIG:MICROBATCHES (CONFIG
#                      relative to the repository); default: gpt-cpu-medium,
#                      llama-tiny and the two larger configs of bench/peers
#     --schedule S     bitpipe's one-rank schedule (default 1f1b: on one
#                      device, forward and backward of each micro-batch in
#                      turn, one micro-batch's activations alive at a time,
#                      as PyTorch's loop; gpipe keeps all N alive; the
#                      losses are the same bit for bit)
#     --threads2       also PyTorch eager with 2 threads
#     --cold-compile   torch.compile with an empty inductor cache in the work
#                      folder (default: the user's cache, so that a second
#                      run.sh compiles from it)
#     hyperparameters  as the executable's flags; defaults lr 1e-3, weight
#                      decay 0.01, max grad norm 1.0, seed 0, random sampling
#
# Per model: bitpipe-compile CONFIG --devices 1 --schedule S
# --microbatches N; bitpipe's initial weights with --steps 0 --save-hf; then
# bitpipe for K steps (one rank, OPENBLAS_NUM_THREADS=1), PyTorch eager and
# PyTorch torch.compile for K steps (bench/peers/torch_step.py, one thread),
# one after the other, R rounds. Data: Debian's license texts as byte tokens.
# Each run's step lines go to OUT/MODEL/*.jsonl; the comparison
# (bench/peers/compare_runs.py) prints per step both losses and tokens/s, and
# last one table: tokens/s (median of the steps after the first two, over
# all rounds), their ratios, peak RSS (bitpipe: the rank process's
# ru_maxrss, taken by a wrapper under mpirun; PyTorch: its own), and the
# losses' relative difference (steps 1-3, step 10, all steps).
#
# The peer environment comes from bench/peers/setup.sh (installed when
# missing: a few minutes and 2.4 GiB of downloads the first time).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

usage() { sed -n '2,/^set -euo pipefail/{/^set /d;s/^# \{0,1\}//;p}' "$0"; }
bin=${BITPIPE_BIN:-$repo/build/bin}
out=/tmp/bitpipe-peers
steps=12
rounds=1
models="gpt-cpu-medium:bench/train-step/gpt-cpu-medium.json:2 llama-tiny:examples/llama-tiny.json:4 gpt-cpu-large:bench/peers/gpt-cpu-large.json:1 llama-cpu-large:bench/peers/llama-cpu-large.json:1"
schedule=1f1b
threads2=0
cold=0
lr=1e-3
wd=0.01
clip=1.0
seed=0
sampling=random
while [ $# -gt 0 ]; do
  case $1 in
  --bin) bin=$2; shift 2 ;;
  --out) out=$2; shift 2 ;;
  --steps) steps=$2; shift 2 ;;
  --rounds) rounds=$2; shift 2 ;;
  --models) models=$2; shift 2 ;;
  --schedule) schedule=$2; shift 2 ;;
  --threads2) threads2=1; shift ;;
  --cold-compile) cold=1; shift ;;
  --lr) lr=$2; shift 2 ;;
  --weight-decay) wd=$2; shift 2 ;;
  --max-grad-norm) clip=$2; shift 2 ;;
  --seed) seed=$2; shift 2 ;;
  --sampling) sampling=$2; shift 2 ;;
  --help | -h) usage; exit 0 ;;
  *) usage >&2; exit 2 ;;
  esac
done
case $steps in '' | *[!0-9]*) echo "run.sh: --steps $steps: a whole number" >&2; exit 2 ;; esac
case $rounds in '' | *[!0-9]*) echo "run.sh: --rounds $rounds: a whole number" >&2; exit 2 ;; esac
[ "$steps" -ge 10 ] || { echo "run.sh: --steps must be at least 10 (step 10 is compared)" >&2; exit 2; }
[ "$rounds" -ge 1 ] || { echo "run.sh: --rounds must be at least 1" >&2; exit 2; }
for t in bitpipe-compile bitpipe-tokenize; do
  [ -x "$bin/$t" ] || { echo "run.sh: no $bin/$t (build bitpipe, or give --bin)" >&2; exit 1; }
done
command -v mpirun >/dev/null || { echo "run.sh: no mpirun" >&2; exit 1; }

started=$(date +%s)
"$here/setup.sh" >&2
py=$("$here/setup.sh" --print-dir)/bin/python
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_PROGRESS_BARS=1
case $out in /*) ;; *) out=$PWD/$out ;; esac
rm -rf "$out"
mkdir -p "$out"
if [ "$cold" = 1 ]; then
  export TORCHINDUCTOR_CACHE_DIR=$out/inductor-cache
fi
mpirun_flags=(--allow-run-as-root --bind-to none -x OPENBLAS_NUM_THREADS=1 -np 1)
hyper=(--lr "$lr" --weight-decay "$wd" --max-grad-norm "$clip" --seed "$seed" --sampling "$sampling")
# The rank's peak RSS: ru_maxrss of its own process, written by a wrapper
# that mpirun starts in its place (RUSAGE_CHILDREN: the rank, not the wrapper).
rsswrap=(-I -c 'import resource, subprocess, sys
r = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(r)')

tokens=$out/tokens.bin
"$bin/bitpipe-tokenize" -o "$tokens" /usr/share/common-licenses/* >&2

{
  echo "{\"steps\": $steps, \"rounds\": $rounds, \"lr\": \"$lr\", \"weight_decay\": \"$wd\", \"max_grad_norm\": \"$clip\", \"seed\": $seed, \"sampling\": \"$sampling\", \"schedule\": \"$schedule\", \"threads2\": $threads2, \"cold_compile\": $cold, \"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')\", \"cores\": $(nproc)}"
} >"$out/run.json"

list=()
for spec in $models; do
  IFS=: read -r name config nmb <<<"$spec"
  if [ -z "$name" ] || [ -z "$config" ] || [ -z "$nmb" ]; then
    echo "run.sh: --models entry '$spec': NAME:CONFIG:MICROBATCHES" >&2
    exit 2
  fi
  case $config in /*) ;; *) config=$repo/$config ;; esac
  d=$out/$name
  mkdir -p "$d"
  read -r T B < <("$py" -I -c 'import json, sys; c = json.load(open(sys.argv[1])); print(c["seq_len"], c["microbatch_size"])' "$config")
  echo "== $name: $config, N=$nmb, B=$B, T=$T" >&2
  "$bin/bitpipe-compile" "$config" --devices 1 --schedule "$schedule" --microbatches "$nmb" -o "$d/train" >&2
  mpirun "${mpirun_flags[@]}" "$d/train" --data "$tokens" --steps 0 --seed "$seed" --save-hf "$d/hf" >"$d/init.log" 2>&1 ||
    { cat "$d/init.log" >&2; exit 1; }
  peer=("$py" "$here/torch_step.py" --hf "$d/hf" --data "$tokens" --seq-len "$T" --microbatch-size "$B" --microbatches "$nmb" --steps "$steps" "${hyper[@]}")
  for r in $(seq 1 "$rounds"); do
    echo "   round $r: bitpipe" >&2
    mpirun "${mpirun_flags[@]}" "$py" "${rsswrap[@]}" "$d/bitpipe.$r.rss" \
      "$d/train" --data "$tokens" --steps "$steps" "${hyper[@]}" --metrics "$d/bitpipe.$r.jsonl" >"$d/bitpipe.$r.log" 2>&1 ||
      { tail "$d/bitpipe.$r.log" >&2; exit 1; }
    echo "   round $r: PyTorch eager, 1 thread" >&2
    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "${peer[@]}" --threads 1 --label eager --metrics "$d/eager.$r.jsonl" >"$d/eager.$r.out" 2>"$d/eager.$r.err" ||
      { tail "$d/eager.$r.err" >&2; exit 1; }
    echo "   round $r: PyTorch torch.compile, 1 thread" >&2
    # A failure of torch.compile is a result, not the end of the run.
    if ! OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "${peer[@]}" --threads 1 --compile --label compiled --metrics "$d/compiled.$r.jsonl" >"$d/compiled.$r.out" 2>"$d/compiled.$r.err"; then
      echo "   torch.compile failed: $(grep -v '^\s*$' "$d/compiled.$r.err" | tail -1)" >&2
    fi
    if [ "$threads2" = 1 ]; then
      echo "   round $r: PyTorch eager, 2 threads" >&2
      OMP_NUM_THREADS=2 MKL_NUM_THREADS=2 "${peer[@]}" --threads 2 --label eager-2t --metrics "$d/eager2.$r.jsonl" >"$d/eager2.$r.out" 2>"$d/eager2.$r.err" ||
        { tail "$d/eager2.$r.err" >&2; exit 1; }
    fi
  done
  list+=("$name")
done

"$py" -I "$here/compare_runs.py" "$out" "${list[@]}"
echo "run.sh: $(($(date +%s) - started)) s in all; files in $out" >&2
