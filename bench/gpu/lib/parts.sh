# shellcheck shell=bash
# parts.sh: what bench/gpu/check.sh runs in each mode, in the order it
# runs, with each part's minimum and cap in seconds (budget.sh says how
# they are used), and the cases of its multi-rank match. Sourced.
#
# The minimums add up to at most the budget less 5 s, the script's own
# start before its first part, so every part that is reached gets its
# minimum even when the parts before it ran to their caps:
#   full, 400 s:  setup 15 + GPU tests 30 + 1-rank match 5 x 6 + diverging
#     runs 2 x 5 + block benchmark 8 + 8 + kernel rates 20 + step benchmark
#     15 + plan cache 8 + step with CUDA graphs 10 + 20 + NCCL communicator
#     tests 6 + 8 +
#     multi-rank references 2 x 8 + multi-rank waves 8 x 10 + killed rank
#     20 + ranks-bench 32 + NCCL rules 5 x 5 + memcheck 8 + 2 x 8 + wrap-up
#     10 = 395 s;
#   quick, 190 s: setup 15 + GPU tests 30 + 1-rank match 5 x 6 +
#     multi-rank references 2 x 8 + multi-rank waves 8 x 10 + wrap-up 10
#     = 181 s.
# setup (unpacking, the libraries, the probe) and wrap-up (packing the
# logs, the table) hold their time without a timeout of their own: setup
# is what the clock shows when the first part starts, wrap-up is never
# granted and so stays reserved to the end.
# A minimum is the least time in which the part can do its work on an
# H200 (a CUDA context, a few steps of a tiny model, NCCL's set-up over
# loopback), an estimate until a run's t column (check.sh's table) measures
# it; a cap stops a part that hangs. The caps do not add up to the budget
# and need not: a part never gets more than the time left less the later
# minimums. Parts that run beyond their minimum take time from the caps of
# those after them, whose grants shrink and, under their minimum, become
# SKIPs that say so.

# The multi-rank match (test/EndToEnd/cuda-ranks.sh): for each model its
# 1-rank reference, then every case (SCHEDULE D K) on D*K ranks, two cases
# at a time: 8 ranks, each with a host thread and an NCCL proxy thread
# that poll, on the 16 cores; more would slow each other down. Then the
# cases with run flags (MODEL SCHEDULE D K FLAGS...), the same executables
# run differently: the sharded optimizer in two levels (BitPipe on 2 x 2)
# and flat over mirror pairs (BitPipe on 4), that one with its third step
# captured into a CUDA graph (when steady).
rank_models=(gpt-tiny bert-tiny)
rank_schedules=("gpipe 4 1" "1f1b 4 1" "interleaved-1f1b 4 1" "chimera 4 1"
  "bitpipe 4 1" "zb-h1 4 1" "bitpipe 2 2")
rank_flag_cases=("gpt-tiny bitpipe 2 2 --shard-optimizer"
  "bert-tiny bitpipe 4 1 --shard-optimizer --cuda-graphs")
rank_wave_size=2
rank_cases=$((${#rank_models[@]} * ${#rank_schedules[@]} + ${#rank_flag_cases[@]}))
rank_waves=$(((rank_cases + rank_wave_size - 1) / rank_wave_size))

# The schedules that ranks-bench.sh does not run, under NCCL's rules at
# megabytes per transfer.
rules_schedules=(gpipe chimera zb-h1 bitpipe-zb zbv)

plan_correctness_head() { # the GPU tests and the 1-rank match
  budget_plan setup 15 60
  budget_plan CudaKernelTests 20 60
  budget_plan CudaBackendTests 10 30
  local c
  for c in "gpt-tiny fp32" "gpt-tiny bf16" "bert-tiny fp32" "bert-tiny bf16" \
    "llama-tiny fp32"; do
    budget_plan "e2e $c" 6 25
  done
}

plan_ranks_match() {
  local model w
  for model in "${rank_models[@]}"; do budget_plan "r1 $model reference" 8 30; done
  for ((w = 1; w <= rank_waves; w++)); do budget_plan "ranks wave $w" 10 40; done
}

check_plan() { # full|quick: budget_start, then the plan of that mode
  local s
  if [ "$1" = quick ]; then
    budget_start "${BITPIPE_CHECK_BUDGET:-190}"
    plan_correctness_head
    plan_ranks_match
  else
    budget_start "${BITPIPE_CHECK_BUDGET:-400}"
    plan_correctness_head
    budget_plan "e2e gpt-tiny diverge" 5 15
    budget_plan "e2e bert-tiny diverge" 5 15
    budget_plan "block ours" 8 30
    budget_plan "block PyTorch" 8 45
    budget_plan "kernel rates" 20 60
    budget_plan "step ours" 15 60
    budget_plan "cuDNN plan cache" 8 40
    budget_plan "step graphs" 10 45
    budget_plan "step PyTorch" 20 60
    budget_plan "NcclCommunicatorTests np2" 6 30
    budget_plan "NcclCommunicatorTests np4" 8 40
    plan_ranks_match
    budget_plan "r4 killed rank" 20 45
    budget_plan ranks-bench 32 90
    for s in "${rules_schedules[@]}"; do budget_plan "r4 nccl rules: $s" 5 25; done
    budget_plan "memcheck probe" 8 20
    budget_plan "memcheck CudaKernelTests" 8 90
    budget_plan "memcheck CudaBackendTests" 8 60
  fi
  budget_plan wrap-up 10 10
}
