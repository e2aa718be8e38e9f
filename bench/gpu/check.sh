#!/usr/bin/env bash
# check.sh: the one prepared GPU check of issues 12 (the CUDA target, one
# rank) and 13 (NCCL: the CUDA target across ranks), and of issue 14's
# non-finite stop on the device path. Written on a machine
# without a GPU; what it finds on the H200 comes back as new work.
#
# On the build machine (no GPU needed), from the repository root:
#     bench/gpu/prepare.sh            # -> build/gpu-check (< 58 MiB)
# then on the GPU machine, from a copy of the repository (any path) that
# carries build/gpu-check:
#     carry:    build/gpu-check
#     command:  bench/gpu/check.sh [--skip-sanitize] [--no-torch]
#     (the device tool: run(command="bench/gpu/check.sh",
#      carry=["build/gpu-check"], timeout_s=540))
# It unpacks build/gpu-check/payload.tar.xz (prepare.sh's header lists it)
# into a temporary folder and runs the programs directly: no absolute build
# paths, no ctest, no compiler. In this order, each under `timeout` within
# one budget of 460 s (BITPIPE_CHECK_BUDGET), of which 230 s
# (BITPIPE_CHECK_RESERVE) are held back from parts 1-5 for parts 6-8, so
# that the whole run ends within 8 minutes on an H200:
#   1. the device (bitpipe-gpu-probe, nvidia-smi) and the shared libraries
#      (the carried ones, and the GPU machine's CUDA libraries: cuBLASLt and
#      cuDNN are found in its CUDA toolkit or Python packages);
#   2. the GPU tests: every GoogleTest binary of runtime/unittests/cuda
#      (CudaKernelTests: the kernels; CudaBackendTests: the executor's
#      CUDA backend, where the build has it), all of their tests;
#      NcclCommunicatorTests under mpirun -np 2 and 4 with the multi-rank
#      checks below;
#   3. the end-to-end match, gpt-tiny and bert-tiny in fp32 and bf16,
#      llama-tiny in fp32
#      (test/EndToEnd/cuda-match.sh case: the GPU run against the CPU run
#      that prepare.sh made), and the same start with --lr 1e30 in bf16
#      (cuda-match.sh diverge: stopped at step 2, nothing saved);
#   4. the block benchmark: ours (bitpipe-gpu-block-bench, own and cuDNN
#      attention; each kernel's time in the log) and PyTorch eager's
#      (torch_block.py) when `import torch` works, TFLOP/s by
#      bench/gpu/flops.py's formula;
#   5. the training-step benchmark (bench/gpu/gpt-24l.json: 24 layers,
#      hidden 2048, T 2048, vocabulary 50304, micro-batch 4, AdamW, bf16):
#      ours (tokens/s, the median of the metrics lines after 2 warm-up
#      steps; the pool's peak in use from the run's report, which leaves
#      out the parameter arrays) and PyTorch's (torch_step.py: tokens/s,
#      max_memory_allocated); for both, the device memory nvidia-smi saw in
#      use at the peak, which compares whole processes and decides the
#      memory row;
#   6. the multi-rank match (test/EndToEnd/cuda-ranks.sh; 4 ranks sharing
#      the GPU, NCCL over loopback): for gpt-tiny and bert-tiny the 1-rank
#      CUDA fp32 reference (run twice: the floor two runs differ by), then
#      every schedule on 4 ranks and BitPipe on 2 x --dp 2 against it, to
#      1e-5 (two cases at a time);
#   7. a SIGKILLed rank ends the 4-rank job non-zero within its --timeout;
#   8. the measurements (bench/gpu/ranks-bench.sh, bench/gpu/gpt-ranks.json
#      on 4 ranks, bf16): BitPipe's and 1F1B's step times, taking turns;
#      from BitPipe's traces the all-reduce time hidden behind compute and
#      the p2p time per step; the simulator fitted to each schedule's GPU
#      trace (bitpipe-calibrate, issue 16) and its error there; raw NCCL
#      calls (nccl-raw) at the run's sizes beside the runtime's. Rows say
#      INFO: there is no target to meet;
#   8b. NCCL's rules at megabytes per transfer: every other
#      schedule compiled for gpt-ranks.json (4 MiB activations), 2 steps on
#      4 ranks under --timeout, with the time left;
#   9. the GPU tests again under compute-sanitizer's memcheck, with the
#      time left (--skip-sanitize: not at all).
# It prints one table LAST: a row per check (PASS / FAIL / SKIP / INFO, the key
# number; benchmark rows say PASS when they meet issue 12's target, ratio
# >= 1.0 against PyTorch (memory: <= PyTorch's), BELOW when not). Logs:
# $OUT/logs.tar.gz, the table: $OUT/summary.txt ($OUT: the device tool's;
# else a temporary folder, named at the end).
#
# Exit status: 0 no check failed; 1 some check failed; 2 build/gpu-check is
# missing or broken; 3 no usable CUDA device (the reason is printed).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bundle=${BITPIPE_GPU_CHECK_DIR:-$root/build/gpu-check}
budget=${BITPIPE_CHECK_BUDGET:-460}
# Held back from parts 1-5 for parts 6-8 (the multi-rank checks).
reserve=${BITPIPE_CHECK_RESERVE:-230}
sanitize=1 torch=1
for arg in "$@"; do
  case $arg in
  --skip-sanitize) sanitize=0 ;;
  --no-torch) torch=0 ;;
  *) echo "usage: $0 [--skip-sanitize] [--no-torch]" >&2; exit 2 ;;
  esac
done
if [ -n "${OUT:-}" ]; then out=$OUT; else out=$(mktemp -d /tmp/bitpipe-gpu-out.XXXXXX); fi
mkdir -p "$out"
scratch=$(mktemp -d /tmp/bitpipe-gpu-check.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
logs=$scratch/logs
payload=$scratch/payload
mkdir -p "$logs" "$payload"
start=$SECONDS

#===----------------------------------------------------------------------===#
# The table.
#===----------------------------------------------------------------------===#
rows=()
failed=0
row() { # NAME RESULT DETAIL
  rows+=("$(printf '%-28s %-6s %s' "$1" "$2" "$3")")
  [ "$2" = FAIL ] && failed=1
  echo "-- $1: $2 $3"
}
print_table() {
  local elapsed=$((SECONDS - start))
  {
    echo
    echo "== bitpipe GPU check (issues 12, 13): ${device_line:-no device}; $((elapsed / 60))m$((elapsed % 60))s"
    printf '%-28s %-6s %s\n' check result "key number"
    printf '%s\n' "${rows[@]}"
  } | tee "$out/summary.txt"
}
finish() { # STATUS
  tar -C "$scratch" -czf "$out/logs.tar.gz" logs 2>/dev/null
  print_table
  [ -z "${OUT:-}" ] && echo "(logs: $out/logs.tar.gz)"
  exit "$1"
}

# Seconds a part may take: at most WANT, and what is left of the budget.
# Prints nothing (and the part is skipped) when under 15 s are left.
allow() {
  local left=$((budget - reserve - (SECONDS - start)))
  [ "$left" -ge 15 ] || return 1
  echo $(($1 < left ? $1 : left))
}

# Runs a command under timeout, output to a log; returns its status
# (124: timed out).
timed() { # SECONDS LOG COMMAND...
  local limit=$1 log=$2
  shift 2
  timeout -k 5 "$limit" "$@" >"$log" 2>&1
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

#===----------------------------------------------------------------------===#
# 1. The payload, the libraries, the device.
#===----------------------------------------------------------------------===#
echo "== payload ($bundle)"
if [ ! -f "$bundle/payload.tar.xz" ]; then
  echo "check: $bundle/payload.tar.xz not found: run bench/gpu/prepare.sh on" \
    "the build machine and carry build/gpu-check" >&2
  exit 2
fi
if ! tar -C "$payload" -xJf "$bundle/payload.tar.xz"; then
  echo "check: cannot unpack $bundle/payload.tar.xz" >&2
  exit 2
fi
sed -n '1,/^files:/p' "$bundle/MANIFEST.txt" 2>/dev/null | sed '$d'
bin=$payload/bin

echo "== shared libraries"
# Where a GPU machine keeps CUDA's libraries: its toolkit, and the Python
# packages that PyTorch brings (nvidia-cublas, nvidia-cudnn-cu13, ...).
lib_dirs=("${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/cuda/lib64
  /usr/local/cuda/targets/x86_64-linux/lib)
for sp in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
  for d in "$sp"/nvidia/*/lib "$sp"/nvidia/cu13/lib "$sp"/torch/lib; do
    [ -d "$d" ] && lib_dirs+=("$d")
  done
done
programs=$(find "$payload" -type f -perm -u+x ! -name '*.so*')
missing_libs() { # the libraries ldd cannot find for the carried programs
  # shellcheck disable=SC2086
  ldd $programs 2>/dev/null | sed -n 's/^[[:space:]]*\([^ ]*\) => not found.*/\1/p' | sort -u
}
added=()
syslibs=$payload/syslibs/lib
for lib in $(missing_libs); do
  found=""
  for d in "$syslibs" "${lib_dirs[@]}"; do
    if [ -e "$d/$lib" ]; then found=$d; break; fi
  done
  if [ -n "$found" ]; then
    case " ${added[*]:-} " in *" $found "*) ;; *) added+=("$found") ;; esac
    export LD_LIBRARY_PATH="$found${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
done
# Libraries that are loaded with dlopen, which ldd does not see: cuDNN's
# sub-libraries (libcudnn.so.9 is a shim) and NVRTC (cuDNN compiles some of
# its kernels at run time). Their folders must be on the loader's path too.
loader_finds() { # SONAME
  ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$1 " && return 0
  local d
  local path=${LD_LIBRARY_PATH:-}
  for d in ${path//:/ }; do [ -e "$d/$1" ] && return 0; done
  return 1
}
for lib in libcudnn_graph.so.9 libcudnn_engines_precompiled.so.9 \
  libcudnn_engines_runtime_compiled.so.9 libcudnn_heuristic.so.9 \
  libnvrtc.so.13; do
  loader_finds "$lib" && continue
  for d in "${lib_dirs[@]}"; do
    if [ -e "$d/$lib" ]; then
      case " ${added[*]:-} " in *" $d "*) ;; *) added+=("$d") ;; esac
      export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      break
    fi
  done
  loader_finds "$lib" || echo "note: $lib not found (loaded at run time by cuDNN; cuDNN attention may be unavailable)"
done
unresolved=$(missing_libs | tr '\n' ' ')
echo "added to LD_LIBRARY_PATH: ${added[*]:-nothing}"
if [ -e "$syslibs/libmpi.so.40" ] && case " ${added[*]:-} " in *" $syslibs "*) true ;; *) false ;; esac; then
  # The carried Open MPI: its components and help texts from the payload
  # (the installdirs variables), and a singleton that starts no daemon (the
  # GPU machine has no orted; one rank needs none).
  export OPAL_PKGLIBDIR=$payload/syslibs/openmpi-components
  export OPAL_PKGDATADIR=$payload/syslibs/openmpi-data
  export OMPI_MCA_ess_singleton_isolated=1
  echo "Open MPI: the carried copy (OPAL_PKGLIBDIR=$OPAL_PKGLIBDIR)"
fi
if [ -n "$unresolved" ]; then
  echo "still missing: $unresolved (searched: the payload, ${lib_dirs[*]})"
  row "shared libraries" FAIL "missing: $unresolved"
else
  row "shared libraries" PASS "${#added[@]} folder(s) added"
fi

echo "== device"
device_line=""
if [ ! -x "$bin/bitpipe-gpu-probe" ]; then
  row "device" FAIL "bitpipe-gpu-probe not prepared (MANIFEST.txt)"
  finish 2
fi
if ! device_line=$("$bin/bitpipe-gpu-probe" 2>&1); then
  echo "check: $device_line" >&2
  row "device" SKIP "$device_line"
  device_line=""
  finish 3
fi
echo "$device_line"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 ||
  echo "(nvidia-smi failed)"
python_ok=0
# The end-to-end comparisons need numpy (the GPU machine's python3 has it).
numpy_python=python3
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import numpy' 2>/dev/null; then numpy_python=$p; break; fi
done
if [ "$torch" = 1 ] && python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  python_ok=1
fi

#===----------------------------------------------------------------------===#
# 2. The kernel tests.
#===----------------------------------------------------------------------===#
kernel_summary() { # LOG: the per-kernel table (largest normalized error)
  grep '^BPCHECK ' "$1" | awk '
    { key = $2 " " $3
      if (!(key in worst)) { order[n++] = key; worst[key] = 0; pass[key] = "PASS"; shapes[key] = 0 }
      err = ($5 ~ /nan|inf/) ? 1e300 : $5 + 0
      if (err > worst[key]) worst[key] = err
      tol[key] = $6; shapes[key]++
      if ($7 != "PASS") pass[key] = "FAIL" }
    END {
      printf "%-22s %-22s %6s %10s %9s %s\n", "kernel", "tensor", "shapes", "max error", "tolerance", "pass"
      for (i = 0; i < n; i++) { k = order[i]; split(k, p, " ")
        printf "%-22s %-22s %6d %10.3e %9s %s\n", p[1], p[2], shapes[k], worst[k], tol[k], pass[k] } }'
}
worst_check() { # LOG: "R of tolerance (kernel tensor)", the largest error/tolerance
  grep '^BPCHECK ' "$1" | awk '
    { r = ($5 ~ /nan|inf/) ? 1e300 : ($5 + 0) / ($6 + 0)
      if (r >= w) { w = r; at = $2 " " $3 } }
    END { if (at != "") printf "worst %.2g of tolerance (%s)", w, at }'
}
gtest_counts() { # LOG: "P passed, F failed, S skipped"
  local p f s
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$1" | tail -1)
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$1" | tail -1)
  s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$1" | tail -1)
  echo "${p:-0} passed, ${f:-0} failed, ${s:-0} skipped"
}

# Every GoogleTest binary of runtime/unittests/cuda that prepare.sh carried
# (CudaKernelTests: the kernels; CudaBackendTests: the executor's backend).
test_binaries=()
for t in "$bin"/Cuda*Tests; do [ -x "$t" ] && test_binaries+=("$t"); done
[ ${#test_binaries[@]} = 0 ] && row "kernel tests" SKIP "no test binary prepared"
for tests in "${test_binaries[@]}"; do
  tname=$(basename "$tests")
  log=$logs/$tname.log
  echo "== $tname"
  if ! limit=$(allow 120); then
    row "$tname" SKIP "time budget spent"
    continue
  fi
  timed "$limit" "$log" "$tests" --gtest_color=no
  rc=$?
  grep -q '^BPCHECK ' "$log" && kernel_summary "$log"
  grep -E '^\[  FAILED  \]' "$log" | head -20
  detail="$(gtest_counts "$log")"
  worst=$(worst_check "$log")
  [ -n "$worst" ] && detail="$detail; $worst"
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    row "$tname" FAIL "timed out after ${limit}s; $detail"
  elif [ "$rc" != 0 ]; then
    tail -5 "$log"
    row "$tname" FAIL "exit $rc; $detail"
  elif ! grep -q '^\[  PASSED  \] [1-9]' "$log"; then
    # The probe saw a device, so a binary whose every test skipped did not
    # see the device the same way: a fault, not a pass.
    row "$tname" FAIL "no test ran on a machine with a device; $detail"
  else
    # Some tests may skip where a device is (cuDNN missing, a test that
    # cannot run under a sanitizer): the count is in the detail, the
    # reasons in the log.
    row "$tname" PASS "$detail"
  fi
done

#===----------------------------------------------------------------------===#
# 3. The end-to-end match.
#===----------------------------------------------------------------------===#
echo "== end-to-end match (test/EndToEnd/cuda-match.sh)"
for model in gpt-tiny bert-tiny llama-tiny; do
  for precision in fp32 bf16; do
    name="e2e $model $precision"
    log=$logs/e2e-$model-$precision.log
    if [ ! -x "$payload/e2e/$model/$precision/train" ] ||
      [ ! -f "$payload/e2e/$model/cpu/params/rank0.safetensors" ]; then
      row "$name" SKIP "not prepared (MANIFEST.txt)"
      continue
    fi
    if ! limit=$(allow 60); then
      row "$name" SKIP "time budget spent"
      continue
    fi
    BITPIPE_BIN=$bin BITPIPE_PYTHON=$numpy_python timed "$limit" "$log" \
      "$root/test/EndToEnd/cuda-match.sh" case "$root/examples/$model.json" \
      "$precision" "$payload/e2e"
    rc=$?
    loss=$(sed -n 's/^step [0-9]*: loss .*(rel \([^)]*\)).*/\1/p' "$log" | sort -g | tail -1)
    params=$(sed -n 's/^params: .*worst \([^ ]*\) of its allowance.*/\1/p' "$log")
    detail="loss rel ${loss:-?} (tol $([ "$precision" = fp32 ] && echo 1e-4 || echo 5e-3)); params ${params:-?} of allowance"
    case $rc in
    0) row "$name" PASS "$detail" ;;
    77) row "$name" SKIP "$(grep -m1 SKIPPED "$log")" ;;
    124 | 137) row "$name" FAIL "timed out after ${limit}s" ;;
    *)
      tail -15 "$log"
      row "$name" FAIL "$detail (exit $rc; log e2e-$model-$precision.log)"
      ;;
    esac
  done
done

# A diverging run on the GPU (--lr 1e30): stopped at step 2 on the device
# path, the first non-finite parameter read back and named, nothing saved.
for model in gpt-tiny bert-tiny; do
  name="e2e $model diverge"
  log=$logs/e2e-$model-diverge.log
  if [ ! -x "$payload/e2e/$model/bf16/train" ] ||
    [ ! -f "$payload/e2e/$model/cpu/init.safetensors" ]; then
    row "$name" SKIP "not prepared (MANIFEST.txt)"
    continue
  fi
  if ! limit=$(allow 30); then
    row "$name" SKIP "time budget spent"
    continue
  fi
  BITPIPE_BIN=$bin BITPIPE_PYTHON=$numpy_python timed "$limit" "$log" \
    "$root/test/EndToEnd/cuda-match.sh" diverge "$root/examples/$model.json" \
    bf16 "$payload/e2e"
  rc=$?
  case $rc in
  0) row "$name" PASS "stopped at step 2, parameter named, nothing saved" ;;
  77) row "$name" SKIP "$(grep -m1 SKIPPED "$log")" ;;
  124 | 137) row "$name" FAIL "timed out after ${limit}s" ;;
  *)
    tail -8 "$log"
    row "$name" FAIL "exit $rc; log e2e-$model-diverge.log"
    ;;
  esac
done

#===----------------------------------------------------------------------===#
# 4. The block benchmark.
#===----------------------------------------------------------------------===#
field() { # LINE KEY: the value of KEY=value in LINE
  sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"
}
echo "== block benchmark: ours"
ours_log=$logs/block-ours.log
: >"$ours_log"
if [ ! -x "$bin/bitpipe-gpu-block-bench" ]; then
  echo "(bitpipe-gpu-block-bench not prepared)"
elif limit=$(allow 60); then
  timed "$limit" "$ours_log" "$bin/bitpipe-gpu-block-bench" --breakdown
  rc=$?
  # The per-kernel times (BPOP lines) stay in the log.
  grep -v '^BPOP ' "$ours_log"
  [ "$rc" = 0 ] || echo "bitpipe-gpu-block-bench: exit $rc"
fi
echo "== block benchmark: PyTorch eager"
torch_log=$logs/block-torch.log
: >"$torch_log"
if [ "$python_ok" = 1 ] && limit=$(allow 75); then
  PYTHONUNBUFFERED=1 timed "$limit" "$torch_log" python3 "$root/bench/gpu/torch_block.py"
  cat "$torch_log"
fi
for shape in "1024 16 1024 8" "2048 16 2048 4" "4096 32 2048 2"; do
  read -r h nh t b <<<"$shape"
  key="H=$h nh=$nh T=$t B=$b"
  theirs=$(grep "^TORCHBENCH block $key " "$torch_log" | head -1)
  torch_tflops=$(field "$theirs" tflops)
  for attn in own cudnn; do
    name="block $h/$nh/$t/$b $attn"
    line=$(grep "^BPBENCH block $key attn=$attn" "$ours_log" | head -1)
    if [ -z "$line" ]; then
      if [ -x "$bin/bitpipe-gpu-block-bench" ]; then
        row "$name" FAIL "no result (log block-ours.log)"
      else
        row "$name" SKIP "not prepared"
      fi
      continue
    fi
    if grep -q ' unsupported$' <<<"$line"; then
      row "$name" SKIP "cuDNN does not support this shape here"
      continue
    fi
    tflops=$(field "$line" tflops)
    if [ -z "$tflops" ]; then
      row "$name" FAIL "no result (log block-ours.log)"
    elif [ -n "$torch_tflops" ]; then
      ratio=$(awk -v a="$tflops" -v b="$torch_tflops" 'BEGIN { printf "%.2f", a / b }')
      verdict=$(awk -v r="$ratio" 'BEGIN { print (r >= 1.0) ? "PASS" : "BELOW" }')
      row "$name" "$verdict" "$tflops TFLOP/s; PyTorch $torch_tflops; ratio $ratio"
    else
      row "$name" SKIP "$tflops TFLOP/s; PyTorch not measured"
    fi
  done
done

#===----------------------------------------------------------------------===#
# 5. The training-step benchmark.
#===----------------------------------------------------------------------===#
# Samples the device memory in use (MiB) until stopped: the peak over a run,
# less what was in use before it, is the run's (context and workspaces
# included, for both sides alike).
sampler=""
start_sampling() { # FILE
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$1" 2>/dev/null &
  sampler=$!
}
stop_sampling() { # FILE BASELINE_MIB: prints the peak above the baseline in GiB
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null && wait "$sampler" 2>/dev/null
  sampler=""
  [ -s "$1" ] || return 0
  sort -g "$1" | tail -1 | awk -v base="$2" '$1 ~ /^[0-9]+$/ { printf "%.1f", ($1 - base) / 1024 }'
}
memory_now() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1; }

echo "== training step: ours (bench/gpu/gpt-24l.json, bf16)"
step_log=$logs/step-ours.log
ours_tps="" ours_pool="" ours_smi=""
if [ ! -x "$payload/step/train" ]; then
  row "step tokens/s" SKIP "not prepared (MANIFEST.txt)"
elif limit=$(allow 120); then
  base=$(memory_now)
  start_sampling "$logs/step-ours.memory"
  timed "$limit" "$step_log" "$payload/step/train" --data "$payload/e2e/tokens.bin" \
    --steps 6 --seed 1 --lr 1e-3 --metrics "$logs/step-ours.jsonl"
  rc=$?
  ours_smi=$(stop_sampling "$logs/step-ours.memory" "${base:-0}")
  tail -12 "$step_log"
  if [ "$rc" = 0 ]; then
    ours_tps=$(sed -n '3,$s/.*"tokens_per_s":\([0-9.eE+-]*\).*/\1/p' "$logs/step-ours.jsonl" | median)
    # The report's pool line (runtime/lib/exec/Training.cpp): the peak in
    # use of the pool of rank 0, MiB.
    ours_pool=$(sed -n 's/.*peak (pool) per rank, MiB: r0 \([0-9.]*\).*/\1/p' "$step_log" | tail -1)
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    row "step tokens/s" FAIL "timed out after ${limit}s (log step-ours.log)"
  else
    row "step tokens/s" FAIL "exit $rc (log step-ours.log)"
  fi
else
  row "step tokens/s" SKIP "time budget spent"
fi
echo "== training step: PyTorch eager"
torch_step_log=$logs/step-torch.log
torch_tps="" torch_peak="" torch_smi=""
if [ "$python_ok" = 1 ] && limit=$(allow 120); then
  base=$(memory_now)
  start_sampling "$logs/step-torch.memory"
  PYTHONUNBUFFERED=1 timed "$limit" "$torch_step_log" python3 "$root/bench/gpu/torch_step.py" --steps 6
  torch_smi=$(stop_sampling "$logs/step-torch.memory" "${base:-0}")
  tail -4 "$torch_step_log"
  line=$(grep '^TORCHSTEP ' "$torch_step_log" | tail -1)
  torch_tps=$(field "$line" tokens_per_s)
  torch_peak=$(field "$line" peak_gib)
fi
if [ -n "$ours_tps" ]; then
  ours_tps=$(printf '%.0f' "$ours_tps")
  if [ -n "$torch_tps" ]; then
    ratio=$(awk -v a="$ours_tps" -v b="$torch_tps" 'BEGIN { printf "%.2f", a / b }')
    verdict=$(awk -v r="$ratio" 'BEGIN { print (r >= 1.0) ? "PASS" : "BELOW" }')
    row "step tokens/s" "$verdict" "$ours_tps; PyTorch $torch_tps; ratio $ratio"
  else
    row "step tokens/s" SKIP "$ours_tps; PyTorch not measured"
  fi
  pool_gib=$([ -n "$ours_pool" ] && awk -v m="$ours_pool" 'BEGIN { printf "%.1f", m / 1024 }')
  # Our pool holds the activations and temporaries; the parameter arrays
  # (weights, bf16 copies, gradients, moments) are allocated beside it, so
  # only nvidia-smi's figures compare whole processes, and decide.
  detail="nvidia-smi ${ours_smi:-?} vs PyTorch ${torch_smi:-?}; pool peak ${pool_gib:-?} (+ parameter arrays) vs max_allocated ${torch_peak:-?}"
  if [ -n "$torch_smi" ] && [ -n "$ours_smi" ]; then
    verdict=$(awk -v a="$ours_smi" -v b="$torch_smi" 'BEGIN { print (a <= b) ? "PASS" : "BELOW" }')
  else
    verdict=SKIP
  fi
  row "step peak memory (GiB)" "$verdict" "$detail"
fi

#===----------------------------------------------------------------------===#
# 6-8. Across ranks (issue 13): the match, the killed rank, the measurements.
#===----------------------------------------------------------------------===#
reserve=0
if ! command -v mpirun >/dev/null && [ -x "$payload/syslibs/bin/mpirun" ]; then
  # The carried launcher, with the carried Open MPI's components.
  export PATH="$payload/syslibs/bin:$PATH"
  export OPAL_PKGLIBDIR=${OPAL_PKGLIBDIR:-$payload/syslibs/openmpi-components}
  export OPAL_PKGDATADIR=${OPAL_PKGDATADIR:-$payload/syslibs/openmpi-data}
  echo "mpirun: the carried copy"
fi
echo "mpirun: $(command -v mpirun || echo 'none')"
export BITPIPE_BIN=$bin BITPIPE_PYTHON=$numpy_python
ranks_sh=$root/test/EndToEnd/cuda-ranks.sh
# ranks_detail LOG: the worst loss and norm differences and the parameters'
# worst ratio to their allowance, from cuda-ranks.sh's log.
ranks_detail() {
  local loss norm params
  loss=$(sed -n 's/^step [0-9]*: loss .*(rel \([^)]*\)).*/\1/p' "$1" | sort -g | tail -1)
  norm=$(sed -n 's/^step [0-9]*: grad_norm .*(rel \([^)]*\)).*/\1/p' "$1" | sort -g | tail -1)
  params=$(sed -n 's/^params: .*worst \([^ ]*\) of its allowance.*/\1/p' "$1" | tail -1)
  echo "loss rel ${loss:-?}, norm rel ${norm:-?} (tol 1e-5); update error ${params:-?} of 1e-5"
}
ranks_row() { # NAME RC LOG LIMIT
  case $2 in
  0) row "$1" PASS "$(ranks_detail "$3")" ;;
  77) row "$1" SKIP "$(grep -m1 SKIPPED "$3")" ;;
  124 | 137) row "$1" FAIL "timed out after ${4}s" ;;
  *)
    tail -12 "$3"
    row "$1" FAIL "$(ranks_detail "$3") (exit $2; log $(basename "$3"))"
    ;;
  esac
}

# The NCCL communicator's own tests (runtime/unittests/cuda/
# NcclCommunicatorTest.cpp), as ctest runs them: 2 and 4 ranks on the one
# GPU (the runtime gives each rank its own NCCL_HOSTID).
if [ -x "$bin/NcclCommunicatorTests" ] && command -v mpirun >/dev/null; then
  for np in 2 4; do
    log=$logs/NcclCommunicatorTests.np$np.log
    echo "== NcclCommunicatorTests, $np ranks"
    if ! limit=$(allow 90); then
      row "NcclCommunicatorTests np$np" SKIP "time budget spent"
      continue
    fi
    timed "$limit" "$log" mpirun --allow-run-as-root --oversubscribe \
      --bind-to none -np "$np" "$bin/NcclCommunicatorTests" --gtest_color=no
    rc=$?
    detail="rank 0: $(gtest_counts "$log")"
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
      row "NcclCommunicatorTests np$np" FAIL "timed out after ${limit}s"
    elif [ "$rc" != 0 ]; then
      grep -E '^\[  FAILED  \]|bitpipe' "$log" | head -10
      row "NcclCommunicatorTests np$np" FAIL "exit $rc; $detail"
    elif ! grep -q '^\[  PASSED  \] [1-9]' "$log"; then
      row "NcclCommunicatorTests np$np" FAIL "no test ran; $detail"
    else
      row "NcclCommunicatorTests np$np" PASS "$detail"
    fi
  done
else
  row "NcclCommunicatorTests" SKIP "not prepared, or no mpirun"
fi

echo "== multi-rank match (test/EndToEnd/cuda-ranks.sh)"
ready_models=()
for model in gpt-tiny bert-tiny; do
  name="r1 $model reference"
  log=$logs/ranks-$model-reference.log
  rdir=$payload/e2e/$model/ranks
  if [ ! -x "$rdir/ref/train" ] || [ ! -f "$rdir/init.safetensors" ]; then
    row "$name" SKIP "not prepared (MANIFEST.txt)"
    continue
  fi
  if ! limit=$(allow 45); then
    row "$name" SKIP "time budget spent"
    continue
  fi
  timed "$limit" "$log" "$ranks_sh" reference "$root/examples/$model.json" "$payload/e2e"
  rc=$?
  floor=$(sed -n 's/^params: .*worst \([^ ]*\) of its allowance.*/\1/p' "$log" | head -1)
  case $rc in
  0)
    row "$name" PASS "run twice: the second's update error ${floor:-?} of 1e-5 (the floor)"
    ready_models+=("$model")
    ;;
  77) row "$name" SKIP "$(grep -m1 SKIPPED "$log")" ;;
  *) tail -12 "$log"; row "$name" FAIL "exit $rc (log $(basename "$log"))" ;;
  esac
done
# The cases, two at a time: 8 ranks, each with a host thread and an NCCL
# proxy thread that poll, on the 16 cores; more would slow each other down.
cases=()
for model in "${ready_models[@]}"; do
  for c in "gpipe 4 1" "1f1b 4 1" "interleaved-1f1b 4 1" "chimera 4 1" \
    "bitpipe 4 1" "zb-h1 4 1" "bitpipe 2 2"; do
    cases+=("$model $c")
  done
done
for ((i = 0; i < ${#cases[@]}; i += 2)); do
  wave=("${cases[@]:i:2}")
  if ! limit=$(allow 60); then
    for c in "${wave[@]}"; do
      read -r model schedule d k <<<"$c"
      row "r$((d * k)) $model $schedule d$d dp$k" SKIP "time budget spent"
    done
    continue
  fi
  pids=()
  for c in "${wave[@]}"; do
    read -r model schedule d k <<<"$c"
    log=$logs/ranks-$model-$schedule-d$d-dp$k.log
    ( timed "$limit" "$log" "$ranks_sh" case "$root/examples/$model.json" \
        "$schedule" "$d" "$k" "$payload/e2e"
      echo $? >"$log.rc" ) &
    pids+=($!)
  done
  wait "${pids[@]}"
  for c in "${wave[@]}"; do
    read -r model schedule d k <<<"$c"
    log=$logs/ranks-$model-$schedule-d$d-dp$k.log
    ranks_row "r$((d * k)) $model $schedule d$d dp$k" "$(cat "$log.rc" 2>/dev/null || echo 1)" "$log" "$limit"
  done
done

echo "== a SIGKILLed rank (cuda-ranks.sh kill)"
log=$logs/ranks-kill.log
if [ ! -x "$payload/e2e/gpt-tiny/ranks/bitpipe-d4-dp1/train" ]; then
  row "r4 killed rank" SKIP "not prepared (MANIFEST.txt)"
elif limit=$(allow 60); then
  timed "$limit" "$log" "$ranks_sh" kill "$root/examples/gpt-tiny.json" "$payload/e2e"
  rc=$?
  cat "$log"
  case $rc in
  0) row "r4 killed rank" PASS "$(sed -n 's/^cuda-ranks: kill: PASS: //p' "$log")" ;;
  77) row "r4 killed rank" SKIP "$(grep -m1 SKIPPED "$log")" ;;
  124 | 137) row "r4 killed rank" FAIL "the test itself timed out after ${limit}s" ;;
  *) row "r4 killed rank" FAIL "$(grep -m1 'kill: FAIL' "$log" || echo "exit $rc")" ;;
  esac
else
  row "r4 killed rank" SKIP "time budget spent"
fi

echo "== measurements (bench/gpu/ranks-bench.sh, gpt-ranks.json on 4 ranks, bf16)"
bench_log=$logs/ranks-bench.log
if [ ! -x "$payload/ranks/bitpipe/train" ] || [ ! -x "$payload/ranks/1f1b/train" ]; then
  row "r4 bitpipe vs 1f1b" SKIP "not prepared (MANIFEST.txt)"
elif limit=$(allow 150); then
  timed "$limit" "$bench_log" "$root/bench/gpu/ranks-bench.sh" \
    "$payload/ranks/bitpipe/train" "$payload/ranks/1f1b/train" \
    "$payload/e2e/tokens.bin" "$logs/ranks-bench" --steps 8 --rounds 2 \
    $([ -x "$payload/ranks/interleaved/train" ] && echo --interleaved "$payload/ranks/interleaved/train")
  rc=$?
  grep '^RANKSBENCH\|^NCCLRAW\|^TRACE overlap' "$bench_log"
  [ "$rc" = 0 ] || tail -15 "$bench_log"
  step_of() { sed -n "s/^RANKSBENCH step schedule=$1 seconds=\([^ ]*\) tokens_per_s=\([^ ]*\).*/\1 s (\2 tokens\/s)/p" "$bench_log"; }
  bp=$(step_of bitpipe) of=$(step_of 1f1b)
  if [ -n "$bp" ] && [ -n "$of" ]; then
    row "r4 bitpipe vs 1f1b" INFO "step bitpipe $bp, 1f1b $of; 4 ranks time-share 1 GPU"
  else
    row "r4 bitpipe vs 1f1b" FAIL "exit $rc; no step times (log ranks-bench.log)"
  fi
  line=$(grep -m1 '^RANKSBENCH overlap ' "$bench_log")
  [ -n "$line" ] && row "r4 all-reduce hidden" INFO "$(field "$line" fraction) of $(field "$line" allreduce_ms_per_step) ms/step (exposed $(field "$line" exposed_ms_per_step) ms; $(field "$line" source))"
  line=$(grep -m1 '^RANKSBENCH p2p ms_per_step' "$bench_log")
  [ -n "$line" ] && row "r4 p2p per step" INFO "$(field "$line" ms_per_step) ms, $(field "$line" ops_per_step) sends+recvs ($(field "$line" source))"
  # The largest bucket: the one where bandwidth, not latency, decides.
  line=$(grep '^RANKSBENCH allreduce ' "$bench_log" |
    awk '{ for (i = 1; i <= NF; ++i) if ($i ~ /^bytes=/) { b = substr($i, 7) + 0 } if (b > best) { best = b; keep = $0 } } END { print keep }')
  [ -n "$line" ] && row "r4 all-reduce vs raw NCCL" INFO "$(field "$line" bytes) B over $(field "$line" ranks): runtime $(field "$line" runtime_GBps) GB/s, raw $(field "$line" raw_GBps) GB/s"
  if ! grep -q '^NCCLRAW ' "$bench_log"; then
    row "r4 raw NCCL (nccl-raw)" FAIL "no result (logs ranks-bench/nccl-raw.log, ranks-bench.log)"
  fi
  for schedule in bitpipe 1f1b; do
    line=$(grep -m1 "^RANKSBENCH calibrate schedule=$schedule " "$bench_log")
    [ -n "$line" ] && row "r4 simulator vs trace: $schedule" INFO "fitted on its own GPU trace: measured $(field "$line" measured_ms) ms, predicted $(field "$line" predicted_ms) ms ($(field "$line" error); at the ranks' speeds $(field "$line" at_speed_error))"
  done
  line=$(grep -m1 '^RANKSBENCH calibrate heldout=bitpipe ' "$bench_log")
  [ -n "$line" ] && row "r4 simulator held out: bitpipe" INFO "fitted on interleaved 1F1B's GPU trace: measured $(field "$line" measured_ms) ms, predicted $(field "$line" predicted_ms) ms ($(field "$line" error); at the ranks' speeds $(field "$line" at_speed_error))"
  line=$(grep -m1 '^RANKSBENCH p2p bytes' "$bench_log")
  [ -n "$line" ] && row "r4 p2p vs raw NCCL" INFO "$(field "$line" bytes) B: runtime <= $(field "$line" runtime_us_per_op) us/op, raw $(field "$line" raw_us) us ($(field "$line" raw_GBps) GB/s)"
else
  row "r4 bitpipe vs 1f1b" SKIP "time budget spent"
fi

# 8b. NCCL's rules at megabytes per transfer: the schedules part
# 8 did not run, compiled for gpt-ranks.json (4 MiB bf16 activations: a
# send completes only once its receive is posted), 2 steps each on 4 ranks
# under --timeout, with the time left. PASS: the run ended and its loss is
# finite; a program that hung stops at the timeout naming the wait.
echo "== NCCL's rules at megabytes per transfer (gpt-ranks.json, 4 ranks, bf16)"
for schedule in gpipe chimera zb-h1 bitpipe-zb zbv; do
  name="r4 nccl rules: $schedule"
  exe=$payload/ranks/$schedule/train
  log=$logs/ranks-rules-$schedule.log
  if [ ! -x "$exe" ]; then
    row "$name" SKIP "not prepared (MANIFEST.txt)"
    continue
  fi
  if ! limit=$(allow 60); then
    row "$name" SKIP "time budget spent"
    continue
  fi
  timed "$limit" "$log" mpirun --allow-run-as-root --oversubscribe \
    --bind-to none -np 4 -x NCCL_DEBUG=WARN "$exe" \
    --data "$payload/e2e/tokens.bin" --steps 2 --timeout $((limit - 15))
  rc=$?
  # The step lines: "step 2 | loss 5.2615 | ...".
  loss=$(grep -Eo '\| loss [^ ]+' "$log" | tail -1 | cut -d' ' -f3)
  case $rc in
  0)
    if [[ "$loss" =~ ^[0-9.eE+-]+$ ]]; then
      row "$name" PASS "2 steps, loss $loss"
    else
      row "$name" FAIL "exit 0 but no finite loss (log $(basename "$log"))"
    fi
    ;;
  124 | 137) tail -8 "$log"; row "$name" FAIL "hung: killed after ${limit}s" ;;
  *)
    tail -8 "$log"
    row "$name" FAIL "exit $rc: $(grep -m1 -o 'timeout after .*' "$log" | cut -c1-90)"
    ;;
  esac
done

#===----------------------------------------------------------------------===#
# 9. memcheck, with the time left.
#===----------------------------------------------------------------------===#
sanitizer=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
for tests in "${test_binaries[@]}"; do
  [ "$sanitize" = 1 ] || break
  tname=$(basename "$tests")
  name="memcheck $tname"
  log=$logs/$tname-memcheck.log
  echo "== compute-sanitizer memcheck over $tname"
  if [ ! -x "$sanitizer" ]; then
    row "$name" SKIP "compute-sanitizer not found"
  elif limit=$(allow 150); then
    timed "$limit" "$log" "$sanitizer" --tool memcheck --error-exitcode 99 \
      --print-limit 20 "$tests" --gtest_color=no
    rc=$?
    errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$log" | tail -1)
    reported=$(grep -c '^========= Invalid\|^========= Program hit' "$log")
    case $rc in
    0) row "$name" PASS "${errors:-0} errors; $(gtest_counts "$log")" ;;
    124 | 137)
      if [ "$reported" -gt 0 ]; then
        row "$name" FAIL "$reported error(s) before the ${limit}s limit"
      else
        row "$name" SKIP "no errors in the ${limit}s it had (incomplete)"
      fi
      ;;
    *)
      grep -m 10 '^=========' "$log"
      row "$name" FAIL "exit $rc; ${errors:-?} errors (log $tname-memcheck.log)"
      ;;
    esac
  else
    row "$name" SKIP "time budget spent"
  fi
done

finish "$failed"
