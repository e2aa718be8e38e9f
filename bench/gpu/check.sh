#!/usr/bin/env bash
# check.sh: the one prepared GPU check of the CUDA target on one rank and
# across ranks (NCCL), and of the non-finite stop on the device path.
#
# On the build machine (no GPU needed), from the repository root:
#     bench/gpu/prepare.sh            # -> build/gpu-check (< 58 MiB)
# then on the GPU machine, from a copy of the repository (any path) that
# carries build/gpu-check:
#     bench/gpu/check.sh [--quick] [--skip-sanitize] [--no-torch]
# With the device tool (start-up costs 1-2 of its 15 minutes; timeout_s
# leaves a minute above the budget for `timeout`'s kill delays):
#     run(command="bench/gpu/check.sh", carry=["build/gpu-check"], timeout_s=460)
#     run(command="bench/gpu/check.sh --quick", carry=["build/gpu-check"], timeout_s=250)
# so that a full run and a --quick rerun fit in one session.
#
# It unpacks build/gpu-check/payload.tar.xz (prepare.sh's header lists it)
# into a temporary folder and runs the programs directly: no absolute build
# paths, no ctest, no compiler. Every part runs under `timeout`, within one
# budget of wall time that includes the unpacking: 400 s, --quick 190 s
# (BITPIPE_CHECK_BUDGET overrides). Each part has a minimum and a cap
# (bench/gpu/lib/parts.sh: the list, and the arithmetic by which the
# minimums add up to 395 s and 181 s); a part gets min(cap, time left -
# the minimums of the parts after it), and a part left less than its
# minimum, or stopped below its cap, is a SKIP that says so, not a FAIL
# (bench/gpu/lib/budget.sh). The parts, in order (--quick: the correctness
# rows only: 1, the GoogleTest binaries of 2, the match of 3 and of 6):
#   1. the payload, the shared libraries (the carried ones, and the GPU
#      machine's CUDA libraries: cuBLASLt and cuDNN are found in its CUDA
#      toolkit or Python packages), Open MPI (below), the device
#      (bitpipe-gpu-probe, nvidia-smi);
#   2. the GPU tests: every GoogleTest binary of runtime/unittests/cuda
#      (CudaKernelTests: the kernels; CudaBackendTests: the executor's
#      CUDA backend, where the build has it), all of their tests;
#      NcclCommunicatorTests under mpirun -np 2 and 4 with the multi-rank
#      checks below;
#   3. the end-to-end match, gpt-tiny, bert-tiny and gpt-tiny-dropout (the
#      dropout kernels, elementwise and in attention, drawing the CPU's
#      masks) in fp32 and bf16, llama-tiny in fp32
#      (test/EndToEnd/cuda-match.sh case: the GPU run
#      against the CPU run that prepare.sh made), and the same start with
#      --lr 1e30 in bf16 (cuda-match.sh diverge: stopped at step 2, nothing
#      saved);
#   4. the block benchmark: ours (bitpipe-gpu-block-bench, own and cuDNN
#      attention; each kernel's time in the log) and PyTorch eager's
#      (torch_block.py) when `import torch` works, TFLOP/s by
#      bench/gpu/flops.py's formula; then the kernels' rates by shape
#      (bitpipe-gpu-kernel-rates: linear products, attention, the rest, as
#      a cluster file's kernel_rates object, docs/clusters.md) into
#      kernel-rates.json of the logs, which the H200 cluster files take
#      (bench/calibration/set-kernel-rates.py);
#   5. the training-step benchmark (bench/gpu/gpt-24l.json: 24 layers,
#      hidden 2048, T 2048, vocabulary 50304, micro-batch 4, AdamW, bf16):
#      ours (tokens/s, the median of the metrics lines after 2 warm-up
#      steps; from the run's report, the pool's peak in use and what it
#      held, plus the parameter arrays: the total) and PyTorch's
#      (torch_step.py: tokens/s,
#      max_memory_allocated); for both, the device memory nvidia-smi saw in
#      use at the peak, which compares whole processes and decides the
#      memory row; and the start-up to the first step that the executable
#      prints (PASS under 5 s); then ours again with --cuda-graphs, 8 steps
#      (2 eager, the third captured into a CUDA graph, the rest replaying
#      it): tokens/s the median of the replayed steps, beside the eager
#      run's, and their ratio (PASS at >= 1.0: what makes graphs the
#      default), with the largest relative difference of the first 6
#      steps' losses from the eager run's; a run that captured no step
#      FAILs;
#   6. the multi-rank match (test/EndToEnd/cuda-ranks.sh; 4 ranks sharing
#      the GPU, NCCL over loopback): for gpt-tiny and bert-tiny the 1-rank
#      CUDA fp32 reference (run twice: the floor two runs differ by), then
#      every schedule on 4 ranks and BitPipe on 2 x --dp 2 against it, to
#      1e-5 (two cases at a time); then the same executables with run flags
#      against it: --shard-optimizer (gpt-tiny, BitPipe 2 x 2: in two
#      levels; bert-tiny, BitPipe on 4: flat, with --cuda-graphs);
#   7. a SIGKILLed rank ends the 4-rank job non-zero within its --timeout;
#   8. the measurements (bench/gpu/ranks-bench.sh, bench/gpu/gpt-ranks.json
#      on 4 ranks, bf16, 6 steps, 2 rounds): BitPipe's and 1F1B's step
#      times, taking turns; from BitPipe's traces the all-reduce time
#      hidden behind compute and the p2p time per step; the simulator
#      fitted to each schedule's GPU trace (bitpipe-calibrate)
#      and its error there; raw NCCL calls (nccl-raw) at the run's sizes
#      beside the runtime's. Rows say INFO: there is no target to meet;
#   8b. NCCL's rules at megabytes per transfer: every other schedule
#      compiled for gpt-ranks.json (4 MiB activations), 2 steps on 4 ranks
#      under --timeout;
#   9. the GPU tests again under compute-sanitizer's memcheck, after a
#      probe of one small kernel test under it (sandboxes such as gVisor
#      refuse the device to it: then a SKIP with its words;
#      --skip-sanitize: not at all).
# Open MPI: the GPU machine's own mpirun with its own libraries where it
# has both, else the carried launcher with the carried libraries and
# components; never one with the other's (part 1 says why). Every mpirun
# line turns off the shared-memory single copy (process_vm_readv), which
# sandboxes refuse.
#
# Output: each row of the table the moment its check ends (the seconds
# since the start, the check, PASS / FAIL / SKIP / INFO / BELOW, what it
# found; a row that is not a PASS names the log with the rest, as
# logs/NAME inside logs.tar.gz), on stdout and appended to
# $OUT/summary.txt at once, so a kill of the whole command leaves the rows
# so far; at the end the totals, and the whole table printed again, last.
# Benchmark rows say PASS when they meet their target, ratio >= 1.0
# against PyTorch (memory: <= PyTorch's), BELOW when not. Logs:
# $OUT/logs.tar.gz, under the 16 MiB the device tool brings back (large
# logs cut to their head and tail, which the logs.tar.gz row says).
# $OUT: the device tool's; else a temporary folder, named at the end.
#
# Exit status: 0 no check failed; 1 some check failed; 2 build/gpu-check is
# missing or broken, or a bad argument; 3 no usable CUDA device (the device
# row says why).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=lib/budget.sh
source "$here/lib/budget.sh"
# shellcheck source=lib/table.sh
source "$here/lib/table.sh"
# shellcheck source=lib/logs.sh
source "$here/lib/logs.sh"
# shellcheck source=lib/parts.sh
source "$here/lib/parts.sh"
bundle=${BITPIPE_GPU_CHECK_DIR:-$root/build/gpu-check}
mode=full sanitize=1 torch=1
for arg in "$@"; do
  case $arg in
  --quick) mode=quick ;;
  --skip-sanitize) sanitize=0 ;;
  --no-torch) torch=0 ;;
  *) echo "usage: $0 [--quick] [--skip-sanitize] [--no-torch]" >&2; exit 2 ;;
  esac
done
if [ -n "${OUT:-}" ]; then out=$OUT; else out=$(mktemp -d /tmp/bitpipe-gpu-out.XXXXXX); fi
mkdir -p "$out"
scratch=$(mktemp -d /tmp/bitpipe-gpu-check.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
logs=$scratch/logs
payload=$scratch/payload
bin=$payload/bin
syslibs=$payload/syslibs/lib
mkdir -p "$logs" "$payload"

#===----------------------------------------------------------------------===#
# Helpers.
#===----------------------------------------------------------------------===#
logref() { echo "logs/${1#"$logs"/}"; } # LOG: its name inside logs.tar.gz

# Runs a command under timeout, output to a log; returns its status
# (124: timed out).
timed() { # SECONDS LOG COMMAND...
  local limit=$1 log=$2
  shift 2
  timeout -k 5 "$limit" "$@" >"$log" 2>&1
}
stopped() { [ "$1" = 124 ] || [ "$1" = 137 ]; } # RC: did timeout stop it?

# why LOG: the line that says best what went wrong, shortened for a row:
# the first NCCL or CUDA error, else the first error, failed test or
# FAIL, else the log's last line.
why() {
  local pattern line=""
  for pattern in 'NCCL WARN|nccl[A-Za-z]*Error|CUDA error|cuda[A-Za-z]*Error' \
    '[Ee]rror:|\[  FAILED  \]|timeout after|FAIL'; do
    line=$(grep -m1 -E "$pattern" "$1") && break
  done
  [ -n "$line" ] || line=$(grep -v '^[[:space:]]*$' "$1" | tail -1)
  sed 's/^[[:space:]]*//' <<<"$line" | cut -c1-120
}

# granted NAME [KEY]: the part KEY (default NAME) starts, with budget_limit
# seconds; else NAME's row says why not and it returns 1.
granted() {
  local rc=0
  budget_grant "${2:-$1}" || rc=$?
  case $rc in
  0) return 0 ;;
  1) row "$1" SKIP "$budget_reason" ;;
  *) row "$1" FAIL "$budget_reason" ;;
  esac
  return 1
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
field() { # LINE KEY: the value of KEY=value in LINE
  sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"
}

gtest_counts() { # LOG: "P passed, F failed, S skipped"
  local p f s
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$1" | tail -1)
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$1" | tail -1)
  s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$1" | tail -1)
  echo "${p:-0} passed, ${f:-0} failed, ${s:-0} skipped"
}

# finish STATUS: packs the logs, adds the totals, prints the table last.
finish() {
  local status=$1 kib shown
  if logs_pack "$logs" "$out/logs.tar.gz"; then
    kib=$(($(stat -c %s "$out/logs.tar.gz") / 1024))
    if [ ${#logs_cut[@]} = 0 ]; then
      row logs.tar.gz PASS "$kib KiB"
    else
      shown=$(printf '%s\n' "${logs_cut[@]}" | head -4 | tr '\n' ' ')
      [ ${#logs_cut[@]} -gt 4 ] && shown+="and $((${#logs_cut[@]} - 4)) more"
      row logs.tar.gz INFO "$kib KiB after cutting ${#logs_cut[@]} log(s) to their first and last $((logs_keep / 2048)) KiB: $shown"
    fi
  else
    row logs.tar.gz FAIL "not under $((logs_limit / 1048576)) MiB even with every log cut to 16 KiB; not brought back"
    rm -f "$out/logs.tar.gz"
  fi
  [ "$status" = 0 ] && table_failed && status=1
  table_totals "$status"
  [ -z "${OUT:-}" ] && echo "(table: $out/summary.txt; logs: $out/logs.tar.gz)"
  exit "$status"
}

#===----------------------------------------------------------------------===#
# 1. The payload, the libraries, Open MPI, the device.
#===----------------------------------------------------------------------===#
part_payload() {
  local log=$logs/unpack.log rc=0 commit
  echo "== payload ($bundle)"
  if [ ! -f "$bundle/payload.tar.xz" ]; then
    echo "check: $bundle/payload.tar.xz not found: run bench/gpu/prepare.sh on" \
      "the build machine and carry build/gpu-check" >&2
    row payload FAIL "$bundle/payload.tar.xz not found: run bench/gpu/prepare.sh on the build machine and carry build/gpu-check"
    finish 2
  fi
  granted payload setup || finish 2
  timed "$budget_limit" "$log" tar -C "$payload" -xJf "$bundle/payload.tar.xz" || rc=$?
  if [ "$rc" != 0 ]; then
    echo "check: cannot unpack $bundle/payload.tar.xz" >&2
    if stopped "$rc"; then
      row payload FAIL "unpacking did not end within $budget_limit s ($(logref "$log"))"
    else
      row payload FAIL "cannot unpack $bundle/payload.tar.xz: $(head -1 "$log") ($(logref "$log"))"
    fi
    finish 2
  fi
  sed -n '1,/^files:/p' "$bundle/MANIFEST.txt" 2>/dev/null | sed '$d'
  commit=$(sed -n 's/^commit: //p' "$bundle/MANIFEST.txt" 2>/dev/null)
  row payload PASS "$(du -sm "$payload" | cut -f1) MiB unpacked; commit ${commit:-unknown (no MANIFEST.txt)}"
}

# Where a GPU machine keeps CUDA's libraries: its toolkit, and the Python
# packages that PyTorch brings (nvidia-cublas, nvidia-cudnn-cu13, ...).
lib_dirs=("${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/cuda/lib64
  /usr/local/cuda/targets/x86_64-linux/lib)
for sp in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
  for d in "$sp"/nvidia/*/lib "$sp"/nvidia/cu13/lib "$sp"/torch/lib; do
    [ -d "$d" ] && lib_dirs+=("$d")
  done
done
added=()
use_folder() { # DIR: first on the loader's path (once)
  case " ${added[*]:-} " in *" $1 "*) return ;; esac
  added+=("$1")
  export LD_LIBRARY_PATH="$1${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
loader_finds() { # SONAME
  # grep reads all of ldconfig's output (no -q): under pipefail, ldconfig
  # killed by SIGPIPE would fail the pipeline at random.
  ldconfig -p 2>/dev/null | grep "^[[:space:]]*$1 " >/dev/null && return 0
  local d path=${LD_LIBRARY_PATH:-}
  for d in ${path//:/ }; do [ -e "$d/$1" ] && return 0; done
  return 1
}

# Open MPI's launcher and its libraries must be one installation: mpirun
# starts the ranks through its own runtime (ORTE, PMIx), which the ranks'
# libmpi must speak, and it loads components and help texts from its own
# folders. The GPU machine's own pair is used where it has both: built
# for that machine, its components and daemons in place. Only where it
# lacks one does the carried copy (prepare.sh: Debian's mpirun, libmpi
# and the libraries they need, components, help texts) come in whole: its
# libraries first on the loader's path, its installation folders named by
# Open MPI's installdirs variables (OPAL_PKGLIBDIR, OPAL_PKGDATADIR) so
# that nothing is read from the machine's, and singletons that start no
# daemon (none is carried; one rank needs none).
mpi_used=none
choose_mpi() {
  if command -v mpirun >/dev/null && loader_finds libmpi.so.40; then
    mpi_used="the machine's, $(command -v mpirun)"
  elif [ -x "$payload/syslibs/bin/mpirun" ] && [ -e "$syslibs/libmpi.so.40" ]; then
    use_folder "$syslibs"
    export PATH="$payload/syslibs/bin:$PATH"
    export OPAL_PKGLIBDIR=$payload/syslibs/openmpi-components
    export OPAL_PKGDATADIR=$payload/syslibs/openmpi-data
    export OMPI_MCA_ess_singleton_isolated=1
    mpi_used="the carried copy (the machine lacks mpirun or libmpi.so.40)"
  else
    return 0
  fi
  mpi_used+=", $(timeout 10 mpirun --version 2>&1 | head -1)"
}
# mpirun as root, more ranks than cores, no binding (ranks share the GPU),
# and no shared-memory single copy: Open MPI's vader transport copies
# large messages with process_vm_readv, which sandboxes (gVisor) refuse;
# MPI carries only NCCL's id and small control messages here.
mpirun_cmd=(mpirun --allow-run-as-root --oversubscribe --bind-to none
  --mca btl_vader_single_copy_mechanism none)

# The programs the check runs; not the carried mpirun, which is used
# only with the carried libraries whole (choose_mpi).
carried_programs() {
  find "$payload" -path "$payload/syslibs" -prune -o -type f -perm -u+x ! -name '*.so*' -print
}
missing_libs() { # the libraries ldd cannot find for the carried programs
  # shellcheck disable=SC2046
  ldd $(carried_programs) 2>/dev/null |
    sed -n 's/^[[:space:]]*\([^ ]*\) => not found.*/\1/p' | sort -u
}

# What the carried programs lack: a carried library is linked alone into a
# folder of its own (the carried folder holds Open MPI's libraries too,
# which must not shadow the machine's); a CUDA library's whole folder is
# added (cuDNN and cuBLAS find their siblings there). Again until nothing
# more is found: a library found can need others.
links=$scratch/libs
resolve_libraries() {
  local lib d found
  mkdir -p "$links"
  export LD_LIBRARY_PATH="$links${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  for _ in 1 2 3; do
    found=0
    for lib in $(missing_libs); do
      if [ -e "$syslibs/$lib" ]; then
        ln -sf "$syslibs/$lib" "$links/$lib" && found=1
        continue
      fi
      for d in "${lib_dirs[@]}"; do
        if [ -e "$d/$lib" ]; then use_folder "$d"; found=1; break; fi
      done
    done
    [ "$found" = 1 ] || break
  done
  # Loaded with dlopen, which ldd does not see: cuDNN's sub-libraries
  # (libcudnn.so.9 is a shim) and NVRTC (cuDNN compiles some of its
  # kernels at run time).
  for lib in libcudnn_graph.so.9 libcudnn_engines_precompiled.so.9 \
    libcudnn_engines_runtime_compiled.so.9 libcudnn_heuristic.so.9 \
    libnvrtc.so.13; do
    loader_finds "$lib" && continue
    for d in "${lib_dirs[@]}"; do
      if [ -e "$d/$lib" ]; then use_folder "$d"; break; fi
    done
    loader_finds "$lib" || echo "note: $lib not found (loaded at run time by cuDNN; cuDNN attention may be unavailable)"
  done
}

part_libraries() {
  local log=$logs/libraries.log unresolved
  echo "== shared libraries, Open MPI"
  choose_mpi
  resolve_libraries >"$log" 2>&1
  unresolved=$(missing_libs | tr '\n' ' ')
  {
    echo "Open MPI: $mpi_used"
    echo "added to LD_LIBRARY_PATH: ${added[*]:-nothing}"
    echo "carried libraries linked into $links: $(ls "$links" | tr '\n' ' ')"
    echo "still missing: ${unresolved:-nothing} (searched: the payload, ${lib_dirs[*]})"
  } | tee -a "$log"
  # shellcheck disable=SC2046
  ldd $(carried_programs) >>"$log" 2>&1
  if [ -n "$unresolved" ]; then
    row "shared libraries" FAIL "missing: $unresolved($(logref "$log"))"
  else
    row "shared libraries" PASS "${#added[@]} folder(s) added, $(ls "$links" | wc -l) carried librar(ies) linked"
  fi
}

part_device() {
  local log=$logs/probe.log rc=0 detail
  echo "== device"
  if [ ! -x "$bin/bitpipe-gpu-probe" ]; then
    row device FAIL "bitpipe-gpu-probe not prepared (MANIFEST.txt)"
    finish 2
  fi
  timed 30 "$log" "$bin/bitpipe-gpu-probe" || rc=$?
  cat "$log"
  if [ "$rc" != 0 ]; then
    if stopped "$rc"; then
      detail="no usable CUDA device: bitpipe-gpu-probe hung (stopped after 30 s)"
    else
      detail=$(head -1 "$log")
      case $detail in "no "*) ;; *) detail="no usable CUDA device: bitpipe-gpu-probe exited $rc: ${detail:-no output}" ;; esac
    fi
    echo "check: $detail" >&2
    row device FAIL "$detail ($(logref "$log"))"
    finish 3
  fi
  timeout 10 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
    --format=csv,noheader >>"$log" 2>&1 || echo "(nvidia-smi failed)" >>"$log"
  tail -n +2 "$log"
  row device PASS "$(head -1 "$log"); mpirun: $mpi_used"
}

# The end-to-end comparisons need numpy (the GPU machine's python3 has it).
numpy_python=python3
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import numpy' 2>/dev/null; then numpy_python=$p; break; fi
done
export BITPIPE_BIN=$bin BITPIPE_PYTHON=$numpy_python

# Whether PyTorch sees the GPU (parts 4 and 5), asked in the background
# while the GPU tests run: importing torch takes seconds that no part
# should wait for.
torch_pid="" torch_reason=unasked
torch_ask() {
  [ "$torch" = 1 ] && [ "$mode" = full ] || return 0
  timeout 60 python3 -c 'import torch, sys; print(torch.__version__, torch.cuda.is_available()); sys.exit(0 if torch.cuda.is_available() else 1)' \
    >"$logs/torch-check.log" 2>&1 &
  torch_pid=$!
}
torch_ready() { # PyTorch with CUDA usable here? (else torch_reason says why)
  if [ "$torch_reason" = unasked ]; then
    if [ "$torch" = 0 ]; then
      torch_reason="--no-torch"
    elif wait "$torch_pid"; then
      torch_reason=""
    else
      torch_reason="python3 cannot use torch with CUDA here ($(logref "$logs/torch-check.log"))"
    fi
  fi
  [ -z "$torch_reason" ]
}

#===----------------------------------------------------------------------===#
# 2. The GPU tests.
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
# The row of a GoogleTest binary's run: RC its exit status, DETAIL its
# counts. The probe saw a device, so a binary whose every test skipped did
# not see the device the same way: a fault, not a pass. Some tests may skip
# where a device is (cuDNN missing, a test that cannot run under a
# sanitizer): the count is in the detail, the reasons in the log.
gtest_row() { # NAME RC LOG DETAIL
  local name=$1 rc=$2 log=$3 detail=$4
  if stopped "$rc"; then
    row_stopped "$name" "$detail; $(logref "$log")"
  elif [ "$rc" != 0 ]; then
    row "$name" FAIL "exit $rc: $(why "$log"); $detail ($(logref "$log"))"
  elif ! grep -q '^\[  PASSED  \] [1-9]' "$log"; then
    row "$name" FAIL "no test ran on a machine with a device; $detail ($(logref "$log"))"
  else
    row "$name" PASS "$detail"
  fi
}

worst_check() { # LOG: "R of tolerance (kernel tensor)", the largest error/tolerance
  grep '^BPCHECK ' "$1" | awk '
    { r = ($5 ~ /nan|inf/) ? 1e300 : ($5 + 0) / ($6 + 0)
      if (r >= w) { w = r; at = $2 " " $3 } }
    END { if (at != "") printf "worst %.2g of tolerance (%s)", w, at }'
}

# Every GoogleTest binary of runtime/unittests/cuda that prepare.sh carried
# (CudaKernelTests: the kernels; CudaBackendTests: the executor's backend).
test_binaries=()
part_gpu_tests() {
  local t tests tname log rc detail worst
  for t in "$bin"/Cuda*Tests; do [ -x "$t" ] && test_binaries+=("$t"); done
  [ ${#test_binaries[@]} = 0 ] && row "GPU tests" SKIP "no test binary prepared (MANIFEST.txt)"
  for tests in "${test_binaries[@]}"; do
    tname=$(basename "$tests")
    log=$logs/$tname.log
    echo "== $tname"
    granted "$tname" || continue
    rc=0
    timed "$budget_limit" "$log" "$tests" --gtest_color=no || rc=$?
    grep -q '^BPCHECK ' "$log" && kernel_summary "$log"
    grep -E '^\[  FAILED  \]' "$log" | head -20
    detail="$(gtest_counts "$log")"
    worst=$(worst_check "$log")
    [ -n "$worst" ] && detail="$detail; $worst"
    [ "$rc" != 0 ] && tail -5 "$log"
    gtest_row "$tname" "$rc" "$log" "$detail"
  done
}

#===----------------------------------------------------------------------===#
# 3. The end-to-end match.
#===----------------------------------------------------------------------===#
part_match() {
  local model precision name log rc loss params detail
  echo "== end-to-end match (test/EndToEnd/cuda-match.sh)"
  for model in gpt-tiny bert-tiny llama-tiny gpt-tiny-dropout; do
    for precision in fp32 bf16; do
      name="e2e $model $precision"
      log=$logs/e2e-$model-$precision.log
      if [ ! -x "$payload/e2e/$model/$precision/train" ] ||
        [ ! -f "$payload/e2e/$model/cpu/params/rank0.safetensors" ]; then
        row "$name" SKIP "not prepared (MANIFEST.txt)"
        continue
      fi
      granted "$name" || continue
      rc=0
      timed "$budget_limit" "$log" "$root/test/EndToEnd/cuda-match.sh" case \
        "$root/examples/$model.json" "$precision" "$payload/e2e" || rc=$?
      loss=$(sed -n 's/^step [0-9]*: loss .*(rel \([^)]*\)).*/\1/p' "$log" | sort -g | tail -1)
      params=$(sed -n 's/^params: .*worst \([^ ]*\) of its allowance.*/\1/p' "$log")
      detail="loss rel ${loss:-?} (tol $([ "$precision" = fp32 ] && echo 1e-4 || echo 5e-3)); params ${params:-?} of allowance"
      case $rc in
      0) row "$name" PASS "$detail" ;;
      77) row "$name" SKIP "$(grep -m1 SKIPPED "$log")" ;;
      124 | 137) row_stopped "$name" "$(logref "$log")" ;;
      *)
        tail -15 "$log"
        row "$name" FAIL "exit $rc: $(why "$log"); $detail ($(logref "$log"))"
        ;;
      esac
    done
  done
}

# A diverging run on the GPU (--lr 1e30): stopped at step 2 on the device
# path, the first non-finite parameter read back and named, nothing saved.
part_diverge() {
  local model name log rc
  for model in gpt-tiny bert-tiny; do
    name="e2e $model diverge"
    log=$logs/e2e-$model-diverge.log
    if [ ! -x "$payload/e2e/$model/bf16/train" ] ||
      [ ! -f "$payload/e2e/$model/cpu/init.safetensors" ]; then
      row "$name" SKIP "not prepared (MANIFEST.txt)"
      continue
    fi
    granted "$name" || continue
    rc=0
    timed "$budget_limit" "$log" "$root/test/EndToEnd/cuda-match.sh" diverge \
      "$root/examples/$model.json" bf16 "$payload/e2e" || rc=$?
    case $rc in
    0) row "$name" PASS "stopped at step 2, parameter named, nothing saved" ;;
    77) row "$name" SKIP "$(grep -m1 SKIPPED "$log")" ;;
    124 | 137) row_stopped "$name" "$(logref "$log")" ;;
    *)
      tail -8 "$log"
      row "$name" FAIL "exit $rc: $(why "$log") ($(logref "$log"))"
      ;;
    esac
  done
}

#===----------------------------------------------------------------------===#
# 4. The block benchmark.
#===----------------------------------------------------------------------===#
part_block() {
  local ours_log=$logs/block-ours.log torch_log=$logs/block-torch.log rc=none
  local shape h nh t b key theirs torch_tflops attn name line tflops ratio verdict
  : >"$ours_log"
  : >"$torch_log"
  echo "== block benchmark: ours"
  if [ ! -x "$bin/bitpipe-gpu-block-bench" ]; then
    row "block ours" SKIP "not prepared (MANIFEST.txt)"
  elif granted "block ours"; then
    rc=0
    timed "$budget_limit" "$ours_log" "$bin/bitpipe-gpu-block-bench" --breakdown || rc=$?
    # The per-kernel times (BPOP lines) stay in the log.
    grep -v '^BPOP ' "$ours_log"
    if stopped "$rc"; then
      row_stopped "block ours" "$(logref "$ours_log")"
    elif [ "$rc" != 0 ]; then
      row "block ours" FAIL "exit $rc: $(why "$ours_log") ($(logref "$ours_log"))"
    fi
  fi
  echo "== block benchmark: PyTorch eager"
  if ! torch_ready; then
    row "block PyTorch" SKIP "$torch_reason"
  elif granted "block PyTorch"; then
    PYTHONUNBUFFERED=1 timed "$budget_limit" "$torch_log" python3 "$root/bench/gpu/torch_block.py"
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
        # A run that ended well owes every shape; one that did not has
        # its row above.
        [ "$rc" = 0 ] && row "$name" FAIL "no result ($(logref "$ours_log"))"
        continue
      fi
      if grep -q ' unsupported$' <<<"$line"; then
        row "$name" SKIP "cuDNN does not support this shape here"
        continue
      fi
      tflops=$(field "$line" tflops)
      if [ -z "$tflops" ]; then
        row "$name" FAIL "no TFLOP/s in its line ($(logref "$ours_log"))"
      elif [ -n "$torch_tflops" ]; then
        ratio=$(awk -v a="$tflops" -v b="$torch_tflops" 'BEGIN { printf "%.2f", a / b }')
        verdict=$(awk -v r="$ratio" 'BEGIN { print (r >= 1.0) ? "PASS" : "BELOW" }')
        row "$name" "$verdict" "$tflops TFLOP/s; PyTorch $torch_tflops; ratio $ratio"
      else
        row "$name" SKIP "$tflops TFLOP/s; PyTorch not measured ($(logref "$torch_log"))"
      fi
    done
  done
}

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
memory_now() { timeout 10 nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1; }

# cuDNN's plans, built by the step run above into a fresh plan cache, are
# restored by a second, one-step run (docs/runtime-abi.md, "Start-up on
# CUDA"): the executable's plan line says how many of each and how long.
plan_cache_row() { # STEP_LOG
  local built_line again_log=$logs/step-plans-again.log again_line rc=0
  built_line=$(grep -m1 '^bitpipe: cuDNN attention plans: ' "$1")
  if [ -z "$built_line" ]; then
    row "cuDNN plan cache" SKIP "no cuDNN plans were made (attention on the runtime's own kernels; $(logref "$1"))"
    return 0
  fi
  granted "cuDNN plan cache" || return 0
  timed "$budget_limit" "$again_log" "$payload/step/train" --data "$payload/e2e/tokens.bin" \
    --steps 1 --seed 1 --lr 1e-3 --plan-cache "$scratch/plans" || rc=$?
  again_line=$(grep -m1 '^bitpipe: cuDNN attention plans: ' "$again_log")
  local built restored
  built=$(echo "$again_line" | sed -n 's/.*plans: \([0-9]*\) built.*/\1/p')
  restored=$(echo "$again_line" | sed -n 's/.* \([0-9]*\) restored.*/\1/p')
  local first second
  first=$(echo "$built_line" | sed -n 's/.*plans: \(.*\) (plan cache.*/\1/p')
  second=$(echo "$again_line" | sed -n 's/.*plans: \(.*\) (plan cache.*/\1/p')
  if [ "$rc" != 0 ]; then
    row "cuDNN plan cache" FAIL "second run: exit $rc: $(why "$again_log") ($(logref "$again_log"))"
  elif [ "$built" = 0 ] && [ "${restored:-0}" -gt 0 ]; then
    row "cuDNN plan cache" PASS "first run $first; second run $second"
  else
    row "cuDNN plan cache" FAIL "second run did not restore every plan: ${second:-no plan line} ($(logref "$again_log"))"
  fi
}

# The step benchmark again with --cuda-graphs (runtime/lib/cuda/backend/
# StepGraph.h): the executable prints "bitpipe: CUDA graphs: step 3
# captured (...)" when it made the graph, and "bitpipe: CUDA graphs: step
# S: rank R: WHY; CHANGE" when a step could not replay it.
graphs_row() { # EAGER_TPS EAGER_JSONL
  local name="step tokens/s graphs" log=$logs/step-graphs.log
  local jsonl=$logs/step-graphs.jsonl rc=0 tps ratio verdict losses given_up
  granted "$name" "step graphs" || return 0
  timed "$budget_limit" "$log" "$payload/step/train" --data "$payload/e2e/tokens.bin" \
    --steps 8 --seed 1 --lr 1e-3 --metrics "$jsonl" \
    --plan-cache "$scratch/plans" --cuda-graphs || rc=$?
  tail -6 "$log"
  if stopped "$rc"; then
    row_stopped "$name" "$(logref "$log")"
    return 0
  elif [ "$rc" != 0 ]; then
    row "$name" FAIL "exit $rc: $(why "$log") ($(logref "$log"))"
    return 0
  fi
  if ! grep -q '^bitpipe: CUDA graphs: step [0-9]* captured' "$log"; then
    row "$name" FAIL "no step was captured: $(grep -m1 'CUDA graphs' "$log" || echo 'no CUDA graphs line') ($(logref "$log"))"
    return 0
  fi
  # Steps 4-8: the replays (step 3 pays for the capture).
  tps=$(sed -n '4,$s/.*"tokens_per_s":\([0-9.eE+-]*\).*/\1/p' "$jsonl" | median)
  if [ -z "$tps" ]; then
    row "$name" FAIL "no tokens/s for the replayed steps ($(logref "$jsonl"))"
    return 0
  fi
  tps=$(printf '%.0f' "$tps")
  ratio=$(awk -v a="$tps" -v b="$1" 'BEGIN { printf "%.2f", a / b }')
  verdict=$(awk -v r="$ratio" 'BEGIN { print (r >= 1.0) ? "PASS" : "BELOW" }')
  # bf16 embedding gradients sum repeated tokens with atomic adds, so two
  # runs may differ in the last bits: a difference, not a check.
  losses=$(paste <(sed -n 's/.*"loss":\([0-9.eE+-]*\).*/\1/p' "$2" | head -6) \
    <(sed -n 's/.*"loss":\([0-9.eE+-]*\).*/\1/p' "$jsonl" | head -6) |
    awk '{ d = $1 - $2; if (d < 0) d = -d; a = $1 < 0 ? -$1 : $1; if (a > 0 && d / a > m) m = d / a } END { printf "%.1e", m }')
  given_up=$(grep -m1 'every step runs eagerly from now on' "$log" | sed 's/^bitpipe: //')
  row "$name" "$verdict" "$tps with --cuda-graphs; eager $1; ratio $ratio; losses rel ${losses:-?} from eager's${given_up:+; $given_up}"
}

# The H200's rates by kernel shape for the cluster files (docs/calibration.md,
# "Rates by kernel shape"): GPT-scale products and attention; few attention
# shapes, because each builds cuDNN plans (seconds each).
part_kernel_rates() {
  local log=$logs/kernel-rates.log json=$logs/kernel-rates.json rc=0 lo hi
  echo "== kernel rates by shape"
  if [ ! -x "$bin/bitpipe-gpu-kernel-rates" ]; then
    row "kernel rates" SKIP "not prepared (MANIFEST.txt)"
    return 0
  fi
  granted "kernel rates" || return 0
  XDG_CACHE_HOME=$scratch timed "$budget_limit" "$log" \
    "$bin/bitpipe-gpu-kernel-rates" --tokens 1024,4096,16384 \
    --dims 1024,4096,8192 --seq-lens 2048,4096 --head-dims 128 \
    --batch-heads 4,16 --other-shape 8192,4096 --min-time 0.02 -o "$json" || rc=$?
  tail -3 "$log"
  if stopped "$rc"; then
    row_stopped "kernel rates" "$(logref "$log")"
  elif [ "$rc" != 0 ] || [ ! -s "$json" ]; then
    row "kernel rates" FAIL "exit $rc: $(why "$log") ($(logref "$log"))"
  else
    read -r lo hi < <(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
v = [e[k] for e in r["linear"] for k in ("forward", "input_grad", "weight_grad")]
print("%.0f %.0f" % (min(v) / 1e12, max(v) / 1e12))' "$json" 2>/dev/null) || true
    row "kernel rates" PASS "linear products ${lo:-?}-${hi:-?} TFLOP/s by shape ($(logref "$json"))"
  fi
}

part_step() {
  local step_log=$logs/step-ours.log torch_step_log=$logs/step-torch.log
  local ours_tps="" ours_pool="" ours_smi="" torch_tps="" torch_peak="" torch_smi=""
  local base rc line ratio verdict mem_gib detail
  echo "== training step: ours (bench/gpu/gpt-24l.json, bf16)"
  if [ ! -x "$payload/step/train" ]; then
    row "step tokens/s" SKIP "not prepared (MANIFEST.txt)"
  elif granted "step tokens/s" "step ours"; then
    base=$(memory_now)
    start_sampling "$logs/step-ours.memory"
    rc=0
    timed "$budget_limit" "$step_log" "$payload/step/train" --data "$payload/e2e/tokens.bin" \
      --steps 6 --seed 1 --lr 1e-3 --metrics "$logs/step-ours.jsonl" \
      --plan-cache "$scratch/plans" || rc=$?
    ours_smi=$(stop_sampling "$logs/step-ours.memory" "${base:-0}")
    tail -12 "$step_log"
    if [ "$rc" = 0 ]; then
      ours_tps=$(sed -n '3,$s/.*"tokens_per_s":\([0-9.eE+-]*\).*/\1/p' "$logs/step-ours.jsonl" | median)
      # The report's memory line (runtime/lib/exec/Training.cpp): rank 0's
      # pool peak in use (what the pool held) + its parameter arrays =
      # total, MiB.
      ours_pool=$(sed -n 's/.*= total: r0 \([0-9.]*\) (\([0-9.]*\)) + \([0-9.]*\) = \([0-9.]*\).*/\1 \2 \3 \4/p' "$step_log" | tail -1)
      [ -n "$ours_tps" ] || row "step tokens/s" FAIL "no tokens/s after the warm-up steps ($(logref "$logs/step-ours.jsonl"))"
      # Start-up to the first step, as the executable prints it: the target
      # is under 5 s for this 1.3 B-parameter model, whose weights are
      # drawn on the device.
      line=$(grep -m1 '^bitpipe: start-up ' "$step_log")
      if [ -n "$line" ]; then
        local startup init
        startup=$(echo "$line" | sed -n 's/^bitpipe: start-up \([0-9.]*\) s.*//p')
        init=$(echo "$line" | sed -n 's/.*initialised on the target in \([0-9.]*\) s.*//p')
        verdict=$(awk -v t="$startup" 'BEGIN { print (t < 5.0) ? "PASS" : "BELOW" }')
        row "step start-up (s)" "$verdict" "$startup to the first step (< 5), of which drawing the weights $init"
      else
        row "step start-up (s)" FAIL "no start-up line ($(logref "$step_log"))"
      fi
      plan_cache_row "$step_log"
      [ -n "$ours_tps" ] && graphs_row "$(printf '%.0f' "$ours_tps")" "$logs/step-ours.jsonl"
    elif stopped "$rc"; then
      row_stopped "step tokens/s" "$(logref "$step_log")"
    else
      row "step tokens/s" FAIL "exit $rc: $(why "$step_log") ($(logref "$step_log"))"
    fi
  fi
  echo "== training step: PyTorch eager"
  if ! torch_ready; then
    row "step PyTorch" SKIP "$torch_reason"
  elif granted "step PyTorch"; then
    base=$(memory_now)
    start_sampling "$logs/step-torch.memory"
    PYTHONUNBUFFERED=1 timed "$budget_limit" "$torch_step_log" python3 "$root/bench/gpu/torch_step.py" --steps 6
    torch_smi=$(stop_sampling "$logs/step-torch.memory" "${base:-0}")
    tail -4 "$torch_step_log"
    line=$(grep '^TORCHSTEP ' "$torch_step_log" | tail -1)
    torch_tps=$(field "$line" tokens_per_s)
    torch_peak=$(field "$line" peak_gib)
  fi
  [ -n "$ours_tps" ] || return 0
  ours_tps=$(printf '%.0f' "$ours_tps")
  if [ -n "$torch_tps" ]; then
    ratio=$(awk -v a="$ours_tps" -v b="$torch_tps" 'BEGIN { printf "%.2f", a / b }')
    verdict=$(awk -v r="$ratio" 'BEGIN { print (r >= 1.0) ? "PASS" : "BELOW" }')
    row "step tokens/s" "$verdict" "$ours_tps; PyTorch $torch_tps; ratio $ratio"
  else
    row "step tokens/s" SKIP "$ours_tps; PyTorch not measured ($(logref "$torch_step_log"))"
  fi
  # Our pool holds the activations and temporaries; the parameter arrays
  # (weights, bf16 copies, gradients, moments) are allocated beside it and
  # the report adds them: "total" is what compares with PyTorch's
  # max_allocated. What the pool held beside its peak in use shows what
  # splitting its segments saves. nvidia-smi's figures compare whole
  # processes, and decide.
  mem_gib=$([ -n "$ours_pool" ] && echo "$ours_pool" |
    awk '{ printf "%.1f (pool %.1f, held %.1f; parameter arrays %.1f)", $4 / 1024, $1 / 1024, $2 / 1024, $3 / 1024 }')
  detail="nvidia-smi ${ours_smi:-?} vs PyTorch ${torch_smi:-?}; peak ${mem_gib:-?} vs max_allocated ${torch_peak:-?}"
  if [ -n "$torch_smi" ] && [ -n "$ours_smi" ]; then
    verdict=$(awk -v a="$ours_smi" -v b="$torch_smi" 'BEGIN { print (a <= b) ? "PASS" : "BELOW" }')
  else
    verdict=SKIP
  fi
  row "step peak memory (GiB)" "$verdict" "$detail"
}

#===----------------------------------------------------------------------===#
# 6-8. Across ranks: the match, the killed rank, the measurements.
#===----------------------------------------------------------------------===#
ranks_sh=$root/test/EndToEnd/cuda-ranks.sh
no_mpirun="no mpirun: the machine has none and none was carried (MANIFEST.txt)"
# ranks_detail LOG: the worst loss and norm differences and the parameters'
# worst ratio to their allowance, from cuda-ranks.sh's log.
ranks_detail() {
  local loss norm params
  loss=$(sed -n 's/^step [0-9]*: loss .*(rel \([^)]*\)).*/\1/p' "$1" | sort -g | tail -1)
  norm=$(sed -n 's/^step [0-9]*: grad_norm .*(rel \([^)]*\)).*/\1/p' "$1" | sort -g | tail -1)
  params=$(sed -n 's/^params: .*worst \([^ ]*\) of its allowance.*/\1/p' "$1" | tail -1)
  echo "loss rel ${loss:-?}, norm rel ${norm:-?} (tol 1e-5); update error ${params:-?} of 1e-5"
}
ranks_row() { # NAME RC LOG
  case $2 in
  0) row "$1" PASS "$(ranks_detail "$3")" ;;
  77) row "$1" SKIP "$(grep -m1 SKIPPED "$3")" ;;
  124 | 137) row_stopped "$1" "$(logref "$3")" ;;
  *)
    tail -12 "$3"
    row "$1" FAIL "exit $2: $(why "$3"); $(ranks_detail "$3") ($(logref "$3"))"
    ;;
  esac
}

# The NCCL communicator's own tests (runtime/unittests/cuda/
# NcclCommunicatorTest.cpp), as ctest runs them: 2 and 4 ranks on the one
# GPU (the runtime gives each rank its own NCCL_HOSTID).
part_nccl_tests() {
  local np name log rc
  if [ ! -x "$bin/NcclCommunicatorTests" ]; then
    row "NcclCommunicatorTests" SKIP "not prepared (MANIFEST.txt)"
    return
  fi
  [ "$mpi_used" = none ] && { row "NcclCommunicatorTests" SKIP "$no_mpirun"; return; }
  for np in 2 4; do
    name="NcclCommunicatorTests np$np"
    log=$logs/NcclCommunicatorTests.np$np.log
    echo "== NcclCommunicatorTests, $np ranks"
    granted "$name" || continue
    rc=0
    timed "$budget_limit" "$log" "${mpirun_cmd[@]}" -np "$np" \
      "$bin/NcclCommunicatorTests" --gtest_color=no || rc=$?
    [ "$rc" != 0 ] && grep -E '^\[  FAILED  \]|bitpipe' "$log" | head -10
    gtest_row "$name" "$rc" "$log" "rank 0: $(gtest_counts "$log")"
  done
}

# flags_suffix "FLAGS": the words of run flags as a name's tail
# ("--shard-optimizer --cuda-graphs" -> "-shard-optimizer-cuda-graphs").
flags_suffix() {
  local word out=""
  for word in $1; do out+="-${word#--}"; done
  echo "$out"
}

part_ranks_match() {
  local model name log rdir rc floor c i w schedule d k flags pids
  local ready_models=() cases=() wave=()
  echo "== multi-rank match (test/EndToEnd/cuda-ranks.sh)"
  for model in "${rank_models[@]}"; do
    name="r1 $model reference"
    log=$logs/ranks-$model-reference.log
    rdir=$payload/e2e/$model/ranks
    if [ ! -x "$rdir/ref/train" ] || [ ! -f "$rdir/init.safetensors" ]; then
      row "$name" SKIP "not prepared (MANIFEST.txt)"
      continue
    fi
    granted "$name" || continue
    rc=0
    timed "$budget_limit" "$log" "$ranks_sh" reference "$root/examples/$model.json" "$payload/e2e" || rc=$?
    floor=$(sed -n 's/^params: .*worst \([^ ]*\) of its allowance.*/\1/p' "$log" | head -1)
    case $rc in
    0)
      row "$name" PASS "run twice: the second's update error ${floor:-?} of 1e-5 (the floor)"
      ready_models+=("$model")
      ;;
    77) row "$name" SKIP "$(grep -m1 SKIPPED "$log")" ;;
    124 | 137) row_stopped "$name" "$(logref "$log")" ;;
    *) tail -12 "$log"; row "$name" FAIL "exit $rc: $(why "$log") ($(logref "$log"))" ;;
    esac
  done
  for model in "${ready_models[@]}"; do
    for c in "${rank_schedules[@]}"; do cases+=("$model $c"); done
  done
  for c in "${rank_flag_cases[@]}"; do
    [[ " ${ready_models[*]} " == *" ${c%% *} "* ]] && cases+=("$c")
  done
  for ((i = 0, w = 1; i < ${#cases[@]}; i += rank_wave_size, w++)); do
    wave=("${cases[@]:i:rank_wave_size}")
    rc=0
    budget_grant "ranks wave $w" || rc=$?
    if [ "$rc" != 0 ]; then
      for c in "${wave[@]}"; do
        read -r model schedule d k flags <<<"$c"
        row "r$((d * k)) $model $schedule d$d dp$k${flags:+ $flags}" "$([ "$rc" = 1 ] && echo SKIP || echo FAIL)" "$budget_reason"
      done
      continue
    fi
    pids=()
    for c in "${wave[@]}"; do
      read -r model schedule d k flags <<<"$c"
      log=$logs/ranks-$model-$schedule-d$d-dp$k$(flags_suffix "$flags").log
      # shellcheck disable=SC2086 # the flags are words
      ( rc=0
        timed "$budget_limit" "$log" "$ranks_sh" case "$root/examples/$model.json" \
          "$schedule" "$d" "$k" "$payload/e2e" $flags || rc=$?
        echo "$rc" >"$log.rc" ) &
      pids+=($!)
    done
    wait "${pids[@]}"
    for c in "${wave[@]}"; do
      read -r model schedule d k flags <<<"$c"
      log=$logs/ranks-$model-$schedule-d$d-dp$k$(flags_suffix "$flags").log
      ranks_row "r$((d * k)) $model $schedule d$d dp$k${flags:+ $flags}" "$(cat "$log.rc" 2>/dev/null || echo 1)" "$log"
      rm -f "$log.rc"
    done
  done
}

part_kill() {
  local name="r4 killed rank" log=$logs/ranks-kill.log rc=0
  echo "== a SIGKILLed rank (cuda-ranks.sh kill)"
  if [ ! -x "$payload/e2e/gpt-tiny/ranks/bitpipe-d4-dp1/train" ]; then
    row "$name" SKIP "not prepared (MANIFEST.txt)"
    return
  fi
  granted "$name" || return 0
  timed "$budget_limit" "$log" "$ranks_sh" kill "$root/examples/gpt-tiny.json" "$payload/e2e" || rc=$?
  cat "$log"
  case $rc in
  0) row "$name" PASS "$(sed -n 's/^cuda-ranks: kill: PASS: //p' "$log")" ;;
  77) row "$name" SKIP "$(grep -m1 SKIPPED "$log")" ;;
  124 | 137) row_stopped "$name" "$(logref "$log")" ;;
  *) row "$name" FAIL "exit $rc: $(grep -m1 'kill: FAIL' "$log" || why "$log") ($(logref "$log"))" ;;
  esac
}

# ranks-bench.sh prints each RANKSBENCH line as soon as it is measured,
# the step, overlap and p2p lines again after each round: the last of each
# kind is the result, and a run stopped part way keeps what it had.
bench_last() { grep "^RANKSBENCH $2" "$1" | tail -1; } # LOG PREFIX
bench_step() { # LOG SCHEDULE: "S s (T tokens/s, R rounds)"
  sed -n "s/^RANKSBENCH step schedule=$2 seconds=\([^ ]*\) tokens_per_s=\([^ ]*\) rounds=\([0-9]*\).*/\1 s (\2 tokens\/s, \3 rounds)/p" <<<"$(bench_last "$1" "step schedule=$2 ")"
}
part_ranks_bench() {
  local log=$logs/ranks-bench.log rc=0 bp of line schedule held_out=()
  echo "== measurements (bench/gpu/ranks-bench.sh, gpt-ranks.json on 4 ranks, bf16)"
  if [ ! -x "$payload/ranks/bitpipe/train" ] || [ ! -x "$payload/ranks/1f1b/train" ]; then
    row ranks-bench SKIP "not prepared (MANIFEST.txt)"
    return
  fi
  [ "$mpi_used" = none ] && { row ranks-bench SKIP "$no_mpirun"; return; }
  granted ranks-bench || return 0
  [ -x "$payload/ranks/interleaved/train" ] && held_out=(--interleaved "$payload/ranks/interleaved/train")
  timed "$budget_limit" "$log" "$root/bench/gpu/ranks-bench.sh" \
    "$payload/ranks/bitpipe/train" "$payload/ranks/1f1b/train" \
    "$payload/e2e/tokens.bin" "$logs/ranks-bench" --steps 6 --rounds 2 \
    "${held_out[@]}" || rc=$?
  grep '^RANKSBENCH\|^NCCLRAW\|^TRACE overlap' "$log"
  [ "$rc" = 0 ] || tail -15 "$log"
  bp=$(bench_step "$log" bitpipe) of=$(bench_step "$log" 1f1b)
  if [ -n "$bp" ] && [ -n "$of" ]; then
    row "r4 bitpipe vs 1f1b" INFO "step bitpipe $bp, 1f1b $of; 4 ranks time-share 1 GPU"
  fi
  if stopped "$rc"; then
    row_stopped "ranks-bench" "its lines so far are the rows around this one; $(logref "$log")"
  elif [ "$rc" != 0 ] || [ -z "$bp" ] || [ -z "$of" ]; then
    row "ranks-bench" FAIL "exit $rc: $(why "$log") ($(logref "$log"))"
  fi
  line=$(bench_last "$log" "overlap ")
  [ -n "$line" ] && row "r4 all-reduce hidden" INFO "$(field "$line" fraction) of $(field "$line" allreduce_ms_per_step) ms/step (exposed $(field "$line" exposed_ms_per_step) ms; $(field "$line" source))"
  line=$(bench_last "$log" "p2p ms_per_step")
  [ -n "$line" ] && row "r4 p2p per step" INFO "$(field "$line" ms_per_step) ms, $(field "$line" ops_per_step) sends+recvs ($(field "$line" source))"
  # The largest bucket: the one where bandwidth, not latency, decides.
  line=$(grep '^RANKSBENCH allreduce ' "$log" |
    awk '{ for (i = 1; i <= NF; ++i) if ($i ~ /^bytes=/) { b = substr($i, 7) + 0 } if (b > best) { best = b; keep = $0 } } END { print keep }')
  [ -n "$line" ] && row "r4 all-reduce vs raw NCCL" INFO "$(field "$line" bytes) B over $(field "$line" ranks): runtime $(field "$line" runtime_GBps) GB/s, raw $(field "$line" raw_GBps) GB/s"
  if ! grep -q '^NCCLRAW ' "$log" && ! stopped "$rc"; then
    row "r4 raw NCCL (nccl-raw)" FAIL "no result ($(logref "$logs/ranks-bench/nccl-raw.log"), $(logref "$log"))"
  fi
  for schedule in bitpipe 1f1b; do
    line=$(bench_last "$log" "calibrate schedule=$schedule ")
    [ -n "$line" ] && row "r4 simulator vs trace: $schedule" INFO "fitted on its own GPU trace: measured $(field "$line" measured_ms) ms, predicted $(field "$line" predicted_ms) ms ($(field "$line" error); at the ranks' speeds $(field "$line" at_speed_error))"
  done
  line=$(bench_last "$log" "calibrate heldout=bitpipe ")
  [ -n "$line" ] && row "r4 simulator held out: bitpipe" INFO "fitted on interleaved 1F1B's GPU trace: measured $(field "$line" measured_ms) ms, predicted $(field "$line" predicted_ms) ms ($(field "$line" error); at the ranks' speeds $(field "$line" at_speed_error))"
  line=$(bench_last "$log" "p2p bytes")
  [ -n "$line" ] && row "r4 p2p vs raw NCCL" INFO "$(field "$line" bytes) B: runtime <= $(field "$line" runtime_us_per_op) us/op, raw $(field "$line" raw_us) us ($(field "$line" raw_GBps) GB/s)"
  return 0
}

# 8b. NCCL's rules at megabytes per transfer: the schedules part 8 did not
# run, compiled for gpt-ranks.json (4 MiB bf16 activations: a send
# completes only once its receive is posted), 2 steps each on 4 ranks.
# PASS: the run ended and its loss is finite. A program that hangs stops at
# its own --timeout (two thirds of its grant), naming the wait; within a
# grant cut below its cap that may be slowness, not a hang: a SKIP.
part_rules() {
  local schedule name exe log rc loss deadline
  echo "== NCCL's rules at megabytes per transfer (gpt-ranks.json, 4 ranks, bf16)"
  for schedule in "${rules_schedules[@]}"; do
    name="r4 nccl rules: $schedule"
    exe=$payload/ranks/$schedule/train
    log=$logs/ranks-rules-$schedule.log
    if [ ! -x "$exe" ]; then
      row "$name" SKIP "not prepared (MANIFEST.txt)"
      continue
    fi
    [ "$mpi_used" = none ] && { row "$name" SKIP "$no_mpirun"; continue; }
    granted "$name" || continue
    deadline=$((budget_limit * 2 / 3 > 0 ? budget_limit * 2 / 3 : 1))
    rc=0
    timed "$budget_limit" "$log" "${mpirun_cmd[@]}" -np 4 -x NCCL_DEBUG=WARN "$exe" \
      --data "$payload/e2e/tokens.bin" --steps 2 --timeout "$deadline" || rc=$?
    # The step lines: "step 2 | loss 5.2615 | ...".
    loss=$(grep -Eo '\| loss [^ ]+' "$log" | tail -1 | cut -d' ' -f3)
    if [ "$rc" = 0 ] && [[ "$loss" =~ ^[0-9.eE+-]+$ ]]; then
      row "$name" PASS "2 steps, loss $loss"
    elif [ "$rc" = 0 ]; then
      row "$name" FAIL "exit 0 but no finite loss ($(logref "$log"))"
    elif stopped "$rc"; then
      tail -8 "$log"
      row_stopped "$name" "$(logref "$log")"
    elif grep -q 'timeout after' "$log" && [ "$budget_limit" -lt "$budget_cap" ]; then
      row "$name" SKIP "time budget spent: its --timeout of $deadline s (of a $budget_limit s share, cap $budget_cap s) ran out ($(logref "$log"))"
    else
      tail -8 "$log"
      row "$name" FAIL "exit $rc: $(grep -m1 -o 'timeout after .*' "$log" | cut -c1-90 || why "$log") ($(logref "$log"))"
    fi
  done
}

#===----------------------------------------------------------------------===#
# 9. memcheck.
#===----------------------------------------------------------------------===#
sanitizer=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
# One small kernel test: it allocates and launches, which is where a
# sandbox's refusal shows ("Device not supported", then error 999).
probe_test=CudaKernels.AddMatchesReferenceAndMayAlias

# sanitizer_usable: memcheck over one small test; else its row says why.
sanitizer_usable() {
  local log=$logs/memcheck-probe.log rc=0 said
  if [ ! -x "$sanitizer" ]; then
    row memcheck SKIP "compute-sanitizer not found"
    return 1
  fi
  granted "memcheck" "memcheck probe" || return 1
  echo "== compute-sanitizer on one small test ($probe_test)"
  timed "$budget_limit" "$log" "$sanitizer" --tool memcheck --error-exitcode 99 \
    "$bin/CudaKernelTests" --gtest_filter="$probe_test" --gtest_color=no || rc=$?
  cat "$log"
  if [ "$rc" = 0 ] && grep -q '^\[  PASSED  \] 1 test' "$log"; then
    return 0
  fi
  if stopped "$rc"; then
    row_stopped memcheck "on the one test $probe_test; $(logref "$log")"
  elif grep -q '^========= \(Invalid\|Program hit\)' "$log"; then
    row memcheck FAIL "errors in the one test $probe_test ($(logref "$log"))"
  elif [ "$rc" = 0 ]; then
    row memcheck SKIP "no test $probe_test in CudaKernelTests to probe the sanitizer with ($(logref "$log"))"
  else
    said=$(grep -v 'ERROR SUMMARY' "$log" | grep -m1 -E '^=+ .*([Ee]rror|not supported)' | sed 's/^=* *//' | cut -c1-100)
    row memcheck SKIP "compute-sanitizer refuses this device: ${said:-exit $rc on one small test} ($(logref "$log"))"
  fi
  return 1
}

part_memcheck() {
  local tests tname name log rc errors reported
  [ ${#test_binaries[@]} = 0 ] && return
  [ "$sanitize" = 1 ] || { row memcheck SKIP "--skip-sanitize"; return; }
  [ -x "$bin/CudaKernelTests" ] || { row memcheck SKIP "no CudaKernelTests to probe the sanitizer with"; return; }
  sanitizer_usable || return 0
  for tests in "${test_binaries[@]}"; do
    tname=$(basename "$tests")
    name="memcheck $tname"
    log=$logs/$tname-memcheck.log
    echo "== compute-sanitizer memcheck over $tname"
    granted "$name" || continue
    rc=0
    timed "$budget_limit" "$log" "$sanitizer" --tool memcheck --error-exitcode 99 \
      --print-limit 20 "$tests" --gtest_color=no || rc=$?
    errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$log" | tail -1)
    reported=$(grep -c '^========= Invalid\|^========= Program hit' "$log")
    case $rc in
    0) row "$name" PASS "${errors:-0} errors; $(gtest_counts "$log")" ;;
    124 | 137)
      if [ "$reported" -gt 0 ]; then
        row "$name" FAIL "$reported error(s) before the $budget_limit s limit ($(logref "$log"))"
      else
        row "$name" SKIP "no errors in the $budget_limit s it had (incomplete; $(logref "$log"))"
      fi
      ;;
    *)
      grep -m 10 '^=========' "$log"
      row "$name" FAIL "exit $rc; ${errors:-?} errors: $(grep -m1 '^========= \(Invalid\|Program hit\)' "$log" | cut -c11-100) ($(logref "$log"))"
      ;;
    esac
  done
}

#===----------------------------------------------------------------------===#
# The run.
#===----------------------------------------------------------------------===#
check_plan "$mode"
table_start "$out/summary.txt" "bitpipe GPU check: $mode, a $budget_total s budget (minimums $(budget_minimums) s); started $(date -u +%Y-%m-%dT%H:%M:%SZ)"
part_payload
part_libraries
part_device
torch_ask
part_gpu_tests
part_match
if [ "$mode" = full ]; then
  part_diverge
  part_block
  part_kernel_rates
  part_step
  part_nccl_tests
fi
part_ranks_match
if [ "$mode" = full ]; then
  part_kill
  part_ranks_bench
  part_rules
  part_memcheck
fi
finish 0
