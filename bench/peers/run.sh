#!/usr/bin/env bash
# run.sh: bitpipe next to PyTorch and Hugging Face transformers on the same
# model, weights, data and update: one process (bitpipe's compiled one-rank
# step against PyTorch eager and torch.compile), then pipelines (bitpipe's
# schedules against torch.distributed.pipelining's on gloo). The two tables
# come last.
#
#   bench/peers/run.sh [--bin DIR] [--out DIR] [--only single|pipelines]
#                      [--steps K] [--rounds R] [--models LIST]
#                      [--schedule S] [--threads2] [--cold-compile]
#                      [--debian-torch]
#                      [--pipe-models LIST] [--pipe-steps K] [--ranks R]
#                      [--pipe-schedules LIST]
#                      [--lr X] [--weight-decay X] [--max-grad-norm X]
#                      [--seed N] [--sampling random|sequential]
#     --bin DIR        bitpipe's tools and runtime (default: $BITPIPE_BIN, else
#                      the repository's build/bin)
#     --out DIR        work folder (default /tmp/bitpipe-peers); replaced
#     --only WHAT      run one half only: single or pipelines
#     --rounds R       runs of each kind, alternating bitpipe and its peers,
#                      R times (default 1)
#   One process:
#     --steps K        steps per run (default 12; at least 10: step 10's
#                      losses are compared)
#     --models LIST    space-separated NAME:CONFIG:MICROBATCHES (CONFIG
#                      relative to the repository); default: gpt-cpu-medium,
#                      llama-tiny and the two larger configs of bench/peers
#     --schedule S     bitpipe's one-rank schedule (default 1f1b: on one
#                      device, forward and backward of each micro-batch in
#                      turn, one micro-batch's activations alive at a time,
#                      as PyTorch's loop; gpipe keeps all N alive; the
#                      losses are the same bit for bit)
#     --threads2       also bitpipe (--threads 2) and PyTorch eager with 2
#                      threads, side by side
#     --debian-torch   also Debian 12's own PyTorch (python3-torch, 1.13;
#                      installed with apt when missing) on
#                      bench/peers/plain_model.py's GPT-2 and LLaMA (Debian
#                      has no transformers), eager, 1 thread (and 2 with
#                      --threads2), alternating with the others; with
#                      OMP_WAIT_POLICY=PASSIVE, as its libgomp threads
#                      and OpenBLAS's own (Debian's pthreads build) spin
#                      against each other otherwise (gpt-cpu-medium at 2
#                      threads: about 580 tok/s spinning, 1,500 passive)
#     --cold-compile   torch.compile with an empty inductor cache in the work
#                      folder (default: the user's cache, so that a second
#                      run.sh compiles from it)
#   Pipelines:
#     --pipe-models LIST  as --models; default gpt-cpu-medium and llama-tiny,
#                      8 micro-batches each
#     --pipe-steps K   steps per run (default 6)
#     --ranks R        ranks per pipeline, one core each (default 4 where the
#                      machine has 4 cores, else 2)
#     --pipe-schedules LIST  which schedules, by bitpipe's or torch_pipeline.py's
#                      names (default all: bitpipe gpipe 1f1b
#                      interleaved-1f1b zb-h1 zbv chimera bitpipe bitpipe-zb;
#                      torch gpipe 1f1b interleaved-1f1b interleaved-zb zbv
#                      dualpipev)
#     hyperparameters  as the executable's flags; defaults lr 1e-3, weight
#                      decay 0.01, max grad norm 1.0, seed 0, random sampling
#
# One process, per model: bitpipe-compile CONFIG --devices 1 --schedule S
# --microbatches N; bitpipe's initial weights with --steps 0 --save-hf; then
# bitpipe for K steps (one rank, OPENBLAS_NUM_THREADS=1), PyTorch eager and
# PyTorch torch.compile for K steps (bench/peers/torch_step.py, one thread),
# one after the other, R rounds. Data: Debian's license texts as byte tokens.
# Each run's step lines go to OUT/MODEL/*.jsonl; the comparison
# (bench/peers/compare_runs.py) prints per step both losses and tokens/s, and
# one table: tokens/s (median of the steps after the first two, over all
# rounds), their ratios, bitpipe's page faults per step after the first
# (its --profile table, which the runs print), peak RSS (bitpipe: the rank
# process's ru_maxrss,
# taken by a wrapper under mpirun; PyTorch: its own), and the losses'
# relative difference (steps 1-3, step 10, all steps).
#
# Pipelines, per model: the stage cuts of bitpipe's partition for R and 2R
# stages (bitpipe-opt --bitpipe-partition print=true), bitpipe-compile
# --devices R for each bitpipe schedule, the initial weights as above; then
# per round each schedule: bitpipe under mpirun -np R --bind-to core, and
# torch_pipeline.py under torchrun with R processes (gloo, one core and one
# thread each) cut at the same layers. compare_pipelines.py prints the table:
# tokens/s, bubble and peak RSS per rank, losses against bitpipe's 1f1b.
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
debian=0
cold=0
only=
pipe_models="gpt-cpu-medium:bench/train-step/gpt-cpu-medium.json:8 llama-tiny:examples/llama-tiny.json:8"
pipe_steps=6
ranks=
bitpipe_schedules="gpipe 1f1b interleaved-1f1b zb-h1 zbv chimera bitpipe bitpipe-zb"
torch_schedules="gpipe 1f1b interleaved-1f1b interleaved-zb zbv dualpipev"
pipe_schedules=
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
  --debian-torch) debian=1; shift ;;
  --only) only=$2; shift 2 ;;
  --pipe-models) pipe_models=$2; shift 2 ;;
  --pipe-steps) pipe_steps=$2; shift 2 ;;
  --ranks) ranks=$2; shift 2 ;;
  --pipe-schedules) pipe_schedules=$2; shift 2 ;;
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
case $pipe_steps in '' | *[!0-9]*) echo "run.sh: --pipe-steps $pipe_steps: a whole number" >&2; exit 2 ;; esac
[ "$pipe_steps" -ge 3 ] || { echo "run.sh: --pipe-steps must be at least 3 (steps 1-3 are compared)" >&2; exit 2; }
case $only in '' | single | pipelines) ;; *) echo "run.sh: --only $only: single or pipelines" >&2; exit 2 ;; esac
if [ -z "$ranks" ]; then
  if [ "$(nproc)" -ge 4 ]; then ranks=4; else ranks=2; fi
fi
case $ranks in '' | *[!0-9]*) echo "run.sh: --ranks $ranks: a whole number" >&2; exit 2 ;; esac
[ "$ranks" -ge 2 ] && [ $((ranks % 2)) = 0 ] || { echo "run.sh: --ranks must be even and at least 2 (BitPipe's pairs)" >&2; exit 2; }
if [ -n "$pipe_schedules" ]; then
  known=" $bitpipe_schedules $torch_schedules "
  for x in $pipe_schedules; do
    case $known in *" $x "*) ;; *) echo "run.sh: --pipe-schedules: no schedule '$x' (bitpipe: $bitpipe_schedules; torch: $torch_schedules)" >&2; exit 2 ;; esac
  done
  keep() { local out= x; for x in $1; do case " $pipe_schedules " in *" $x "*) out="$out $x" ;; esac; done; echo $out; }
  bitpipe_schedules=$(keep "$bitpipe_schedules")
  torch_schedules=$(keep "$torch_schedules")
  # Every loss is compared with bitpipe's 1f1b run.
  case " $bitpipe_schedules " in *" 1f1b "*) ;; *) bitpipe_schedules="1f1b $bitpipe_schedules" ;; esac
fi
for t in bitpipe-compile bitpipe-tokenize bitpipe-import bitpipe-opt; do
  [ -x "$bin/$t" ] || { echo "run.sh: no $bin/$t (build bitpipe, or give --bin)" >&2; exit 1; }
done
command -v mpirun >/dev/null || { echo "run.sh: no mpirun" >&2; exit 1; }

started=$(date +%s)
"$here/setup.sh" >&2
py=$("$here/setup.sh" --print-dir)/bin/python
# Debian's PyTorch: its python3, with python3-torch from apt. -I keeps a
# user's site-packages (another torch) out of it (-s for the runs:
# -I would also drop the script's folder from the path).
debian_py=/usr/bin/python3
if [ "$debian" = 1 ] && [ "$only" != pipelines ]; then
  if ! "$debian_py" -I -c 'import torch' 2>/dev/null; then
    command -v apt-get >/dev/null || { echo "run.sh: --debian-torch: no apt-get to install python3-torch" >&2; exit 1; }
    sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
    echo "run.sh: installing Debian's python3-torch (apt)" >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-torch >&2 ||
      { echo "run.sh: --debian-torch: apt-get install python3-torch failed" >&2; exit 1; }
  fi
  echo "run.sh: Debian's PyTorch $("$debian_py" -I -c 'import torch; print(torch.__version__)')" >&2
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_PROGRESS_BARS=1
case $out in /*) ;; *) out=$PWD/$out ;; esac
rm -rf "$out"
mkdir -p "$out"
if [ "$cold" = 1 ]; then
  export TORCHINDUCTOR_CACHE_DIR=$out/inductor-cache
fi
mpirun_flags=(--allow-run-as-root --bind-to none -x OPENBLAS_NUM_THREADS=1 -np 1)
hyper=(--lr "$lr" --weight-decay "$wd" --max-grad-norm "$clip" --seed "$seed" --sampling "$sampling")
# A rank's peak RSS: ru_maxrss of its own process, written by a wrapper
# that mpirun starts in its place (RUSAGE_CHILDREN: the rank, not the
# wrapper), to FILE or, with --per-rank, FILE.RANK.
rsswrap=(-I -c 'import os, resource, subprocess, sys
per_rank = sys.argv[1] == "--per-rank"
path = sys.argv[2] + "." + os.environ.get("OMPI_COMM_WORLD_RANK", "0") if per_rank else sys.argv[1]
r = subprocess.call(sys.argv[3 if per_rank else 2:])
open(path, "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(r)')

tokens=$out/tokens.bin
"$bin/bitpipe-tokenize" -o "$tokens" /usr/share/common-licenses/* >&2

{
  echo "{\"steps\": $steps, \"rounds\": $rounds, \"debian_torch\": $debian, \"lr\": \"$lr\", \"weight_decay\": \"$wd\", \"max_grad_norm\": \"$clip\", \"seed\": $seed, \"sampling\": \"$sampling\", \"schedule\": \"$schedule\", \"threads2\": $threads2, \"cold_compile\": $cold, \"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')\", \"cores\": $(nproc)}"
} >"$out/run.json"

# model_spec OPTION SPEC: NAME:CONFIG:MICROBATCHES into name, config (made
# absolute) and nmb; T, B and family from the config.
model_spec() {
  IFS=: read -r name config nmb <<<"$2"
  if [ -z "$name" ] || [ -z "$config" ] || [ -z "$nmb" ]; then
    echo "run.sh: $1 entry '$2': NAME:CONFIG:MICROBATCHES" >&2
    exit 2
  fi
  case $config in /*) ;; *) config=$repo/$config ;; esac
  read -r T B family < <("$py" -I -c 'import json, sys; c = json.load(open(sys.argv[1])); print(c["seq_len"], c["microbatch_size"], c["family"])' "$config")
}
# list_json "a b": ["a", "b"]
list_json() { local out= x; for x in $1; do out="$out${out:+, }\"$x\""; done; echo "[$out]"; }

list=()
[ "$only" = pipelines ] && models=
for spec in $models; do
  model_spec --models "$spec"
  d=$out/$name
  mkdir -p "$d"
  echo "== $name: $config, N=$nmb, B=$B, T=$T" >&2
  "$bin/bitpipe-compile" "$config" --devices 1 --schedule "$schedule" --microbatches "$nmb" -o "$d/train" >&2
  mpirun "${mpirun_flags[@]}" "$d/train" --data "$tokens" --steps 0 --seed "$seed" --save-hf "$d/hf" >"$d/init.log" 2>&1 ||
    { cat "$d/init.log" >&2; exit 1; }
  peer=("$py" "$here/torch_step.py" --hf "$d/hf" --data "$tokens" --seq-len "$T" --microbatch-size "$B" --microbatches "$nmb" --steps "$steps" "${hyper[@]}")
  for r in $(seq 1 "$rounds"); do
    echo "   round $r: bitpipe" >&2
    mpirun "${mpirun_flags[@]}" "$py" "${rsswrap[@]}" "$d/bitpipe.$r.rss" \
      "$d/train" --data "$tokens" --steps "$steps" "${hyper[@]}" --profile --metrics "$d/bitpipe.$r.jsonl" >"$d/bitpipe.$r.log" 2>&1 ||
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
      echo "   round $r: bitpipe, 2 threads" >&2
      mpirun "${mpirun_flags[@]}" "$py" "${rsswrap[@]}" "$d/bitpipe2.$r.rss" \
        "$d/train" --data "$tokens" --steps "$steps" "${hyper[@]}" --threads 2 --profile \
        --metrics "$d/bitpipe2.$r.jsonl" >"$d/bitpipe2.$r.log" 2>&1 ||
        { tail "$d/bitpipe2.$r.log" >&2; exit 1; }
      echo "   round $r: PyTorch eager, 2 threads" >&2
      OMP_NUM_THREADS=2 MKL_NUM_THREADS=2 "${peer[@]}" --threads 2 --label eager-2t --metrics "$d/eager2.$r.jsonl" >"$d/eager2.$r.out" 2>"$d/eager2.$r.err" ||
        { tail "$d/eager2.$r.err" >&2; exit 1; }
    fi
    if [ "$debian" = 1 ]; then
      for t in 1 $([ "$threads2" = 1 ] && echo 2); do
        kind=debian; [ "$t" = 2 ] && kind=debian2
        echo "   round $r: Debian's PyTorch eager, plain model, $t thread(s)" >&2
        OMP_NUM_THREADS=$t OMP_WAIT_POLICY=PASSIVE "$debian_py" -s "${peer[@]:1}" --model plain --threads "$t" --label "$kind" \
          --metrics "$d/$kind.$r.jsonl" >"$d/$kind.$r.out" 2>"$d/$kind.$r.err" ||
          { tail "$d/$kind.$r.err" >&2; exit 1; }
      done
    fi
  done
  list+=("$name")
done

# Pipelines: bitpipe's schedules and torch.distributed.pipelining's.
# stage_starts MODEL.mlir K: the first layer of each of bitpipe's K stages,
# comma-separated, from the partition that bitpipe-compile runs.
stage_starts() {
  "$bin/bitpipe-opt" "$1" --bitpipe-annotate-cost --bitpipe-partition="chunks=$2 print=true" -o /dev/null |
    awk '/^[0-9]+ / { split($2, l, "-"); s = s (s == "" ? "" : ",") l[1] } END { print s }'
}
# Stages of each bitpipe schedule on R ranks: R, or 2R for those with two
# chunks per rank (docs/schedules.md).
stages_of() {
  case $1 in interleaved-1f1b | interleaved-zb | zbv | dualpipev | bitpipe | bitpipe-zb) echo $((2 * ranks)) ;; *) echo "$ranks" ;; esac
}
# One core per rank; with more ranks than cores (to try the run, not to
# time it) the ranks share them.
pipe_mpirun=(--allow-run-as-root --bind-to core -x OPENBLAS_NUM_THREADS=1 -np "$ranks")
if [ "$ranks" -gt "$(nproc)" ] && [ "$only" != single ] && [ -n "$pipe_models" ]; then
  echo "run.sh: --ranks $ranks on $(nproc) cores: the ranks share cores, so the pipeline timings measure nothing" >&2
  pipe_mpirun=(--allow-run-as-root --oversubscribe --bind-to none -x OPENBLAS_NUM_THREADS=1 -np "$ranks")
fi
pipe_list=()
[ "$only" = single ] && pipe_models=
for spec in $pipe_models; do
  model_spec --pipe-models "$spec"
  d=$out/pipe-$name
  mkdir -p "$d"
  echo "== pipelines, $name: $config, $ranks ranks, N=$nmb, B=$B, T=$T" >&2
  "$bin/bitpipe-import" "$family" --config "$config" -o "$d/model.mlir" >&2
  starts_r=$(stage_starts "$d/model.mlir" "$ranks")
  starts_2r=$(stage_starts "$d/model.mlir" $((2 * ranks)))
  [ -n "$starts_r" ] && [ -n "$starts_2r" ] || { echo "run.sh: no partition table from bitpipe-opt for $config" >&2; exit 1; }
  for s in $bitpipe_schedules; do
    "$bin/bitpipe-compile" "$config" --devices "$ranks" --schedule "$s" --microbatches "$nmb" -o "$d/train-$s" >&2
  done
  # The initial weights: every schedule starts from the same (the seed's).
  first=${bitpipe_schedules%% *}
  mpirun --allow-run-as-root --oversubscribe -np "$ranks" "$d/train-$first" --data "$tokens" --steps 0 --seed "$seed" --save-hf "$d/hf" >"$d/init.log" 2>&1 ||
    { cat "$d/init.log" >&2; exit 1; }
  echo "{\"ranks\": $ranks, \"steps\": $pipe_steps, \"rounds\": $rounds, \"microbatches\": $nmb, \"microbatch_size\": $B, \"seq_len\": $T, \"starts\": {\"$ranks\": \"$starts_r\", \"$((2 * ranks))\": \"$starts_2r\"}, \"schedules_bitpipe\": $(list_json "$bitpipe_schedules"), \"schedules_torch\": $(list_json "$torch_schedules")}" >"$d/run.json"
  for r in $(seq 1 "$rounds"); do
    # bitpipe's and torch's run of one schedule one after the other, so
    # that a neighbour on the machine touches both alike.
    for s in $(echo $bitpipe_schedules $torch_schedules | tr ' ' '\n' | awk '!seen[$0]++'); do
      case " $bitpipe_schedules " in
      *" $s "*)
        echo "   round $r: bitpipe $s" >&2
        mpirun "${pipe_mpirun[@]}" "$py" "${rsswrap[@]}" --per-rank "$d/bitpipe-$s.$r.rss" \
          "$d/train-$s" --data "$tokens" --steps "$pipe_steps" "${hyper[@]}" --metrics "$d/bitpipe-$s.$r.jsonl" >"$d/bitpipe-$s.$r.log" 2>&1 ||
          { tail "$d/bitpipe-$s.$r.log" >&2; exit 1; }
        ;;
      esac
      case " $torch_schedules " in
      *" $s "*)
        echo "   round $r: torch $s" >&2
        if [ "$(stages_of "$s")" = "$ranks" ]; then st=$starts_r; else st=$starts_2r; fi
        # A schedule torch refuses, or a failed run, is a result in the
        # table, not the end of the comparison.
        OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "$py" -W ignore -m torch.distributed.run --standalone --nproc-per-node "$ranks" \
          "$here/torch_pipeline.py" --schedule "$s" --starts "$st" --hf "$d/hf" --data "$tokens" --seq-len "$T" \
          --microbatch-size "$B" --microbatches "$nmb" --steps "$pipe_steps" "${hyper[@]}" --label "$s" \
          --metrics "$d/torch-$s.$r.jsonl" >"$d/torch-$s.$r.out" 2>"$d/torch-$s.$r.err" ||
          echo "   torch $s failed: $(grep 'torch_pipeline.py:' "$d/torch-$s.$r.err" | tail -1)" >&2
        ;;
      esac
    done
  done
  pipe_list+=("$name")
done

rc=0
if [ ${#list[@]} -gt 0 ]; then
  "$py" -I "$here/compare_runs.py" "$out" "${list[@]}" || rc=1
fi
if [ ${#pipe_list[@]} -gt 0 ]; then
  "$py" -I "$here/compare_pipelines.py" "$out" "${pipe_list[@]}" || rc=1
fi
echo "run.sh: $(($(date +%s) - started)) s in all; files in $out" >&2
exit $rc
