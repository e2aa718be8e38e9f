#!/usr/bin/env bash
# prepare.sh: gathers, on the build machine (no GPU needed), everything that
# bench/gpu/check.sh runs on the GPU machine into ONE folder, by default
# build/gpu-check, so that the device tool carries just that folder. It
# holds MANIFEST.txt (what was prepared, from which commit, what failed) and
# payload.tar.xz, which check.sh unpacks into a temporary folder there:
#
#   bin/      the GPU tests (CudaKernelTests; CudaBackendTests and
#             NcclCommunicatorTests (run under mpirun) where the
#             build has it), bitpipe-gpu-probe, bitpipe-gpu-block-bench,
#             bitpipe-gpu-kernel-rates, bitpipe-compare, nccl-raw,
#             bitpipe-calibrate (stripped)
#   e2e/      tokens.bin (the corpus: Debian's license texts as byte tokens)
#             and, per model (gpt-tiny, bert-tiny, llama-tiny): cpu/ the CPU run that the
#             GPU runs must match (initial checkpoint, metrics, parameters;
#             run here, so the CPU executable and OpenBLAS stay behind),
#             fp32/train and bf16/train (the CUDA executables; llama-tiny: fp32)
#             and ranks/ (test/EndToEnd/cuda-ranks.sh: the initial
#             checkpoint, written here by a CPU run; ref/train, the 1-rank
#             CUDA fp32 executable; one fp32 executable per schedule on 4
#             ranks and BitPipe on 2 x --dp 2)
#   step/     train: bench/gpu/gpt-24l.json compiled for one GPU, bf16
#   ranks/    bitpipe/train, 1f1b/train (and gpipe, chimera, zb-h1,
#             bitpipe-zb, zbv for the check under NCCL's rules):
#             bench/gpu/gpt-ranks.json on 4
#             ranks, bf16 (bench/gpu/ranks-bench.sh's step times, trace and
#             sizes for nccl-raw); interleaved/train, the same model under
#             interleaved 1F1B with 2 chunks per device (BitPipe's 8-stage
#             cut), whose trace the calibration fits to predict BitPipe's
#   syslibs/  shared libraries the carried programs need beyond a plain
#             Linux and the GPU machine's own CUDA libraries (its driver,
#             cuBLAS, cuDNN, NCCL): MPI, say, with its plugins, and
#             Open MPI's launcher (bin/mpirun), used (with the carried
#             MPI libraries) only where the GPU machine lacks its own
#             mpirun or libmpi
#
# One xz archive because every CUDA executable embeds the same kernels'
# machine code: packed together (xz -9 looks 64 MiB back) they cost about
# one copy.
#
#   bench/gpu/prepare.sh [--no-build]
#     --no-build  use the build folder as it is (do not run CMake/Ninja)
#   BITPIPE_BUILD_DIR      the build folder (default ./build)
#   BITPIPE_GPU_CHECK_DIR  the output folder (default $BITPIPE_BUILD_DIR/gpu-check)
#   BITPIPE_JOBS           Ninja's parallelism (default: the core count)
#
# Every step runs even when an earlier one failed (a missing CUDA target
# should not stop the kernel tests from being carried); each failure is named
# at the end and in MANIFEST.txt, and the exit status is 1 if there was one;
# check.sh shows what is missing as SKIP rows. The folder must stay under the
# device tool's 64 MiB (with the repository's ~4 MiB): the size is checked
# last.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BITPIPE_BUILD_DIR:-$root/build}
build=$(cd "$build" 2>/dev/null && pwd || echo "$build")
dest=${BITPIPE_GPU_CHECK_DIR:-$build/gpu-check}
work=$dest.work
stage=$work/payload
limit_mib=58
do_build=1
case "${1:-}" in
--no-build) do_build=0 ;;
"") ;;
*) echo "usage: $0 [--no-build]" >&2; exit 2 ;;
esac

failures=()
fail() { failures+=("$1"); echo "prepare: FAILED: $1" >&2; }
step() { echo; echo "== $*"; }

step "build ($build)"
targets=(CudaKernelTests bitpipe-gpu-probe bitpipe-gpu-block-bench
  bitpipe-gpu-kernel-rates bitpipe-compile bitpipe-compare bitpipe-tokenize nccl-raw bitpipe-calibrate)
if [ "$do_build" = 1 ]; then
  if [ ! -f "$build/build.ninja" ]; then
    cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
      -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
      -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-19/build/utils/lit/lit.py \
      -DCMAKE_CUDA_ARCHITECTURES=90 || fail "CMake configure"
  fi
  # The executor's CUDA backend tests, where this build has them.
  for t in CudaBackendTests NcclCommunicatorTests; do
    # grep reads all of ninja's output (no -q): under pipefail, ninja
    # killed by SIGPIPE would fail the pipeline at random.
    ninja -C "$build" -t targets all 2>/dev/null | grep "^$t:" >/dev/null &&
      targets+=("$t")
  done
  # The runtime libraries that bitpipe-compile links executables with, for
  # either target, and their link-file targets: every BitPipeRuntime*.
  link_targets=$(ninja -C "$build" -t targets all 2>/dev/null |
    sed -n 's/^\(BitPipeRuntime[A-Za-z0-9_]*\):.*/\1/p' | sort -u)
  for t in "${targets[@]}" $link_targets; do
    # One target at a time, so that one that cannot build (the block bench
    # before the kernels exist) does not hide the others.
    ninja -C "$build" -j"${BITPIPE_JOBS:-$(nproc)}" "$t" >"$work.build-$t.log" 2>&1 ||
      { tail -20 "$work.build-$t.log"; fail "building $t (log: $work.build-$t.log)"; }
  done
fi
bin=$build/bin
grep -q '^BITPIPE_ENABLE_CUDA:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null ||
  fail "$build was configured without CUDA (BITPIPE_ENABLE_CUDA is not ON): no GPU programs"

rm -rf "$dest" "$work"
mkdir -p "$dest" "$stage/bin" "$stage/e2e" "$stage/step" "$stage/ranks"

step "programs -> bin/"
carry_program() { # PATH: copy, stripped, into bin/
  if [ -x "$1" ]; then
    cp "$1" "$stage/bin/" && strip --strip-unneeded "$stage/bin/$(basename "$1")" ||
      fail "copying $1"
  else
    fail "$1 is missing (not built)"
  fi
}
carry_program "$build/runtime/unittests/cuda/CudaKernelTests"
for t in CudaBackendTests NcclCommunicatorTests; do
  [ -x "$build/runtime/unittests/cuda/$t" ] &&
    carry_program "$build/runtime/unittests/cuda/$t"
done
carry_program "$bin/bitpipe-gpu-probe"
carry_program "$bin/bitpipe-gpu-block-bench"
carry_program "$bin/bitpipe-gpu-kernel-rates"
carry_program "$bin/bitpipe-compare"
carry_program "$bin/nccl-raw"
carry_program "$bin/bitpipe-calibrate"

# The corpus, shared by the match test and the step benchmark.
export BITPIPE_BIN=$bin
export BITPIPE_PYTHON=${BITPIPE_PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3)}
"$bin/bitpipe-tokenize" -o "$stage/e2e/tokens.bin" /usr/share/common-licenses/* >/dev/null ||
  fail "bitpipe-tokenize (the corpus)"

match=$root/test/EndToEnd/cuda-match.sh
for model in gpt-tiny bert-tiny llama-tiny gpt-tiny-dropout; do
  config=$root/examples/$model.json
  step "end-to-end match, $model: the CPU run (here), the CUDA executables"
  if "$match" reference "$config" "$stage/e2e" >"$work/$model-cpu.log" 2>&1; then
    # The CPU executable stays behind: the GPU machine runs only the CUDA side.
    mv "$stage/e2e/$model/cpu/train" "$work/$model-cpu-train"
    tail -3 "$work/$model-cpu.log"
  else
    tail -20 "$work/$model-cpu.log"
    fail "the CPU run of $model (log: $work/$model-cpu.log)"
  fi
  for precision in fp32 bf16; do
    # No bf16 tolerances are derived for LLaMA (docs/llama.md):
    # its fp32 match only; check.sh reports its bf16 row as not prepared.
    [ "$model" = llama-tiny ] && [ "$precision" = bf16 ] && continue
    "$match" compile "$config" "$precision" "$stage/e2e" ||
      fail "bitpipe-compile --target cuda --precision $precision $model"
  done
done

ranks=$root/test/EndToEnd/cuda-ranks.sh
for model in gpt-tiny bert-tiny; do
  config=$root/examples/$model.json
  step "multi-rank match, $model: the initial checkpoint (a CPU run, here), the CUDA fp32 executables"
  # Same folder as the 1-rank match (the corpus is shared): e2e/<model>/ranks.
  if ! "$ranks" init "$config" "$stage/e2e" >"$work/$model-ranks-init.log" 2>&1; then
    tail -20 "$work/$model-ranks-init.log"
    fail "the initial checkpoint of $model for cuda-ranks.sh (log: $work/$model-ranks-init.log)"
  fi
  for c in "gpipe 1 1" "gpipe 4 1" "1f1b 4 1" "interleaved-1f1b 4 1" \
    "chimera 4 1" "bitpipe 4 1" "zb-h1 4 1" "bitpipe 2 2"; do
    read -r schedule d k <<<"$c"
    "$ranks" compile "$config" "$schedule" "$d" "$k" "$stage/e2e" fp32 ||
      fail "bitpipe-compile --target cuda --precision fp32 --schedule $schedule --devices $d --dp $k $model"
  done
done

step "multi-rank benchmark: bench/gpu/gpt-ranks.json on 4 ranks, bf16, every schedule (interleaved 1F1B at 2 chunks per device)"
# BitPipe and 1F1B for ranks-bench.sh; the other schedules at the same
# sizes for check.sh's run under NCCL's rules at megabytes per transfer.
for schedule in bitpipe 1f1b gpipe chimera zb-h1 bitpipe-zb zbv; do
  mkdir -p "$stage/ranks/$schedule"
  "$bin/bitpipe-compile" "$root/bench/gpu/gpt-ranks.json" --target cuda \
    --precision bf16 --devices 4 --schedule "$schedule" --microbatches 8 \
    -o "$stage/ranks/$schedule/train" ||
    fail "bitpipe-compile --target cuda --precision bf16 --schedule $schedule bench/gpu/gpt-ranks.json"
done
mkdir -p "$stage/ranks/interleaved"
"$bin/bitpipe-compile" "$root/bench/gpu/gpt-ranks.json" --target cuda \
  --precision bf16 --devices 4 --schedule interleaved-1f1b \
  --chunks-per-device 2 --microbatches 8 -o "$stage/ranks/interleaved/train" ||
  fail "bitpipe-compile --target cuda --precision bf16 --schedule interleaved-1f1b --chunks-per-device 2 bench/gpu/gpt-ranks.json"

step "training-step benchmark: bench/gpu/gpt-24l.json for one GPU, bf16"
# One rank, one micro-batch of 4 x 2048 tokens per step: the step that
# torch_step.py times. gpipe with one stage and one micro-batch is plain
# forward, backward, AdamW.
if ! "$bin/bitpipe-compile" "$root/bench/gpu/gpt-24l.json" --target cuda \
  --precision bf16 --devices 1 --schedule gpipe --microbatches 1 \
  -o "$stage/step/train"; then
  echo "prepare: bitpipe-compile --target cuda failed (above)" >&2
  fail "bitpipe-compile --target cuda --precision bf16 bench/gpu/gpt-24l.json"
fi

step "Open MPI's launcher, for a GPU machine without one"
# The multi-rank checks need mpirun; check.sh uses the GPU machine's own
# where it has both mpirun and libmpi.so.40 (one installation), and this
# copy only where not, then with the carried libraries and components
# (OPAL_PKGLIBDIR, OPAL_PKGDATADIR) as one: it starts local ranks itself,
# one node needs no orted.
if launcher=$(command -v mpirun); then
  mkdir -p "$stage/syslibs/bin"
  cp -L "$launcher" "$stage/syslibs/bin/mpirun" || fail "copying $launcher"
else
  fail "no mpirun on this machine to carry"
fi

step "shared libraries the carried programs need"
# Left to the GPU machine: the C/C++ base system, and CUDA's driver and
# large libraries (cuBLAS/cuBLASLt, cuDNN, NCCL: hundreds of MiB; check.sh
# finds them there). Everything else that a program links is packed.
base='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libgcc_s\.so|libstdc\+\+\.so|libresolv\.so|libutil\.so)'
gpu_side='^(libcuda\.so|libcudnn|libcublas|libnccl|libnvidia|libnvrtc|libnvJitLink)'
libdir=$stage/syslibs/lib
mkdir -p "$libdir"
programs=$(find "$stage" -type f -perm -u+x)
needed_from() { # ELF...: "name path" of each library ldd resolves
  ldd "$@" 2>/dev/null | sed -n 's/^[[:space:]]*\([^ ]*\) => \(\/[^ ]*\) .*/\1 \2/p; s/^[[:space:]]*\([^ ]*\) => not found.*/\1 NOTFOUND/p' | sort -u
}
copy_libs() { # ELF...
  local name path
  while read -r name path; do
    [[ $name =~ $base || $name =~ $gpu_side ]] && continue
    if [ "$path" = NOTFOUND ]; then
      fail "a carried program needs $name, which this machine lacks too"
      continue
    fi
    [ -e "$libdir/$name" ] || cp -L "$path" "$libdir/$name"
  done < <(needed_from "$@")
}
[ -n "$programs" ] && copy_libs $programs
if [ -e "$libdir/libmpi.so.40" ] || ls "$libdir"/libmpi.so* >/dev/null 2>&1; then
  # Open MPI loads its components at run time from its install folders;
  # check.sh points it at these copies (OPAL_PKGLIBDIR, OPAL_PKGDATADIR)
  # when it uses the carried launcher.
  pkglibdir=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir:\(.*\)/\1/p')
  pkgdatadir=$(ompi_info --path pkgdatadir --parsable 2>/dev/null | sed -n 's/^path:pkgdatadir:\(.*\)/\1/p')
  if [ -d "$pkglibdir" ] && [ -d "$pkgdatadir" ]; then
    cp -rL "$pkglibdir" "$stage/syslibs/openmpi-components"
    cp -rL "$pkgdatadir" "$stage/syslibs/openmpi-data"
    copy_libs "$stage/syslibs/openmpi-components"/*.so
  else
    fail "the programs link Open MPI, but ompi_info does not name its component folders"
  fi
fi
ls "$libdir"

step "payload.tar.xz, manifest and size"
XZ_OPT=-9 tar -C "$stage" -cJf "$dest/payload.tar.xz" . || fail "packing $dest/payload.tar.xz"
{
  echo "bitpipe GPU check folder, made by bench/gpu/prepare.sh"
  echo "commit: $(git -C "$root" rev-parse HEAD 2>/dev/null)$(git -C "$root" diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "made: $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -n)"
  echo "failed while preparing:"
  if [ ${#failures[@]} = 0 ]; then echo "  nothing"; else printf '  %s\n' "${failures[@]}"; fi
  echo "files:"
  (cd "$stage" && find . -type f ! -path './syslibs/*' -printf '  %7k KiB %p\n' | sort -k3)
  [ -d "$stage/syslibs" ] &&
    echo "  $(du -sk "$stage/syslibs" | cut -f1) KiB ./syslibs/ ($(find "$stage/syslibs" -type f | wc -l) files: $(ls "$stage/syslibs/lib" 2>/dev/null | tr '\n' ' '))"
  echo "packed: $(du -k "$dest/payload.tar.xz" | cut -f1) KiB payload.tar.xz"
} >"$dest/MANIFEST.txt"
size_kib=$(du -sk "$dest" | cut -f1)
echo "$dest: $((size_kib / 1024)) MiB (limit $limit_mib MiB: the device tool carries 64 MiB with the repository)"
[ "$size_kib" -le $((limit_mib * 1024)) ] || fail "$dest is $((size_kib / 1024)) MiB, over $limit_mib MiB"

echo
if [ ${#failures[@]} = 0 ]; then
  echo "prepare: ready. Carry $(realpath --relative-to="$root" "$dest" 2>/dev/null || echo "$dest") and run bench/gpu/check.sh (its header)."
  exit 0
fi
echo "prepare: ${#failures[@]} step(s) failed:"
printf '  %s\n' "${failures[@]}"
echo "check.sh reports what is missing as SKIP (not prepared) rows."
exit 1
