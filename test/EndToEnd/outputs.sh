#!/usr/bin/env bash
# Outputs are protected (docs/files.md, docs/launching.md "Outputs"):
#
#  - the training executable's --save, --trace, --metrics and
#    --dump-rank-params targets are checked before the first step, on every
#    rank that writes them: a directory, a symbolic link, a missing or
#    read-only directory is refused with the flag named, and no step runs;
#  - on a full disk (a small tmpfs, when this user may mount one) every tool
#    and every target fails with the file named and "No space left on
#    device", exits non-zero, leaves the old file as it was and no
#    temporary: bitpipe-import, bitpipe-opt, bitpipe-compile (--emit=mlir,
#    obj, exe), bitpipe-tokenize, --save, --trace, --metrics,
#    --dump-rank-params;
#  - Ctrl-C during bitpipe-compile's link leaves no temporary;
#  - a temporary left by a killed run is removed by the next save.
#
#   outputs.sh WORKDIR        (BITPIPE_BIN: the build's bin directory)
set -uo pipefail
source "$(dirname "$0")/common.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$1/outputs
mounts=()
cleanup() {
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done
  rm -rf "$ompi_session_base"
}
trap cleanup EXIT
for m in "$work"/full "$work"/ro; do umount "$m" 2>/dev/null; done
rm -rf "$work" && mkdir -p "$work"
failures=0

fail() {
  echo "FAIL $1: $2"
  [ -n "${3:-}" ] && sed 's/^/    /' "$3" | head -20
  failures=$((failures + 1))
}
ok() { echo "ok   $1"; }
# The extended regular expression that matches the string $1 literally.
literal() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|]/\\&/g'; }
w=$(literal "$work")

set -e
tokens=$(tokens "$work")
"$bin/bitpipe-compile" "$root/examples/gpt-tiny.json" --devices 2 \
  --schedule bitpipe --microbatches 4 -o "$work/gpt"
train=(mpirun "${mpirun_flags[@]}" -np 2 "$work/gpt" --data "$tokens"
  --timeout 60)
set +e

# expect NAME PATTERN COMMAND...: COMMAND exits non-zero, a line of its
# output is exactly PATTERN (an extended regular expression), and, for the
# training executable, no step ran.
expect() {
  local name=$1 pattern=$2 log=$work/$1.log rc
  shift 2
  timeout 300 "$@" >"$log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    fail "$name" "exited 0" "$log"
  elif [ $rc -eq 124 ]; then
    fail "$name" "still running after 300 s" "$log"
  elif ! grep -Eqx "$pattern" "$log"; then
    fail "$name" "exit $rc, but no line is /$pattern/" "$log"
  elif [ "${checked_before_training:-}" = 1 ] && grep -q '^step 1 ' "$log"; then
    fail "$name" "exit $rc, but only after training" "$log"
  else
    ok "$name: exit $rc: $(grep -Exm1 "$pattern" "$log")"
  fi
}
# unchanged NAME FILE COPY: FILE is as COPY says; no temporary next to it.
unchanged() {
  if ! cmp -s "$2" "$3"; then
    fail "$1" "'$2' changed"
    return 1
  elif compgen -G "$2.tmp.*" >/dev/null; then
    fail "$1" "a temporary is left: $(echo "$2".tmp.*)"
    return 1
  fi
}

# 1. Targets refused before the first step.
checked_before_training=1
mkdir -p "$work/a-directory"
ln -s "$work/elsewhere" "$work/a-link"
expect save-directory \
  "bitpipe: rank 0: error: --save: '$w/a-directory' is a directory; refusing to replace it with a file: expected a regular file or a new name" \
  "${train[@]}" --steps 2 --save "$work/a-directory"
expect trace-link \
  "bitpipe: rank 0: error: --trace: '$w/a-link' is a dangling symbolic link \(to '$w/elsewhere'\); refusing to replace the link with a file: name the file itself" \
  "${train[@]}" --steps 2 --trace "$work/a-link"
expect metrics-missing-directory \
  "bitpipe: rank 0: error: --metrics: '$w/no/such/metrics\.jsonl' cannot be created: directory '$w/no/such' does not exist" \
  "${train[@]}" --steps 2 --metrics "$work/no/such/metrics.jsonl"
# A directory access() calls writable that takes no new file (/proc, as
# root): the temporary is tried before the first step, not at the save.
expect save-proc \
  "bitpipe: rank 0: error: --save: '/proc/bitpipe-ckpt\.safetensors' cannot be written: .*" \
  "${train[@]}" --steps 2 --save /proc/bitpipe-ckpt.safetensors
# Rank 1 writes its own file: it checks it, and says so.
mkdir -p "$work/dump/rank1.safetensors"
expect dump-rank-params-rank1 \
  "bitpipe: rank 1: error: --dump-rank-params: '$w/dump/rank1\.safetensors' is a directory; refusing to replace it with a file: expected a regular file or a new name" \
  "${train[@]}" --steps 2 --dump-rank-params "$work/dump"
[ -L "$work/a-link" ] && [ -d "$work/a-directory" ] ||
  fail refused-targets "a refused target was replaced"
checked_before_training=0

# Streams are written into: the metrics of a run to /dev/null.
log=$work/metrics-devnull.log
if "${train[@]}" --steps 1 --metrics /dev/null >"$log" 2>&1 && [ -c /dev/null ]; then
  ok "metrics-devnull: --metrics /dev/null trains and /dev/null is a device"
else
  fail metrics-devnull "exit non-zero or /dev/null replaced" "$log"
fi

# 2. A temporary of a killed save (no process has pid 999999999) is
# removed by the next run, with a note (before its first step:
# runtime/unittests/exec/OptionsTest.cpp; the order of mpirun's forwarded
# stderr and stdout lines cannot show it).
echo partial >"$work/ckpt.safetensors.tmp.999999999"
log=$work/stale.log
if "${train[@]}" --steps 1 --save "$work/ckpt.safetensors" >"$log" 2>&1 &&
  [ ! -e "$work/ckpt.safetensors.tmp.999999999" ] &&
  grep -qx "note: removed '$work/ckpt.safetensors.tmp.999999999', a temporary file left by process 999999999, which no longer runs (an interrupted write of '$work/ckpt.safetensors')" "$log"; then
  ok "stale-temporary: removed, with a note"
else
  fail stale-temporary "not removed, or no note" "$log"
fi

# 3. Ctrl-C while bitpipe-compile links (SIGINT to its process group, as a
# terminal sends it): the executable's temporary and the object's scratch
# file are removed, the previous executable is untouched, and the process
# ends by the signal. A "linker" that writes its output and waits makes
# the moment certain.
cat >"$work/slow-linker" <<'LINKER'
#!/bin/sh
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
echo partial >"$out"
echo "$out" >"$(dirname "$0")/linker-ready"
exec sleep 60
LINKER
chmod +x "$work/slow-linker"
echo "old executable" >"$work/linked" && cp "$work/linked" "$work/linked.old"
mkdir -p "$work/scratch"
log=$work/interrupted-link.log
# A script's background job starts with SIGINT ignored; a terminal's
# foreground job does not: restore the default, then become the compiler.
default_sigint=("$python" -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])')
TMPDIR=$work/scratch setsid "${default_sigint[@]}" "$bin/bitpipe-compile" \
  "$root/examples/gpt-tiny.json" \
  --devices 1 --schedule gpipe --linker "$work/slow-linker" -o "$work/linked" \
  >"$log" 2>&1 &
compiler=$!
for _ in $(seq 1 1200); do
  [ -f "$work/linker-ready" ] && break
  kill -0 $compiler 2>/dev/null || break
  sleep 0.1
done
if [ ! -f "$work/linker-ready" ]; then
  fail interrupted-link "the linker never ran" "$log"
  kill -9 -- -$compiler 2>/dev/null
  wait $compiler 2>/dev/null
else
  temporary=$(cat "$work/linker-ready")
  kill -INT -- -$compiler
  wait $compiler
  rc=$?
  if [ $rc -ne 130 ]; then
    fail interrupted-link "exit $rc, not 130 (ended by SIGINT)" "$log"
  elif [ -e "$temporary" ] || [ -n "$(ls -A "$work/scratch")" ]; then
    fail interrupted-link "left $temporary or scratch files: $(ls -A "$work/scratch")"
  else
    unchanged interrupted-link "$work/linked" "$work/linked.old" &&
      ok "interrupted-link: exit 130, no temporary, the old executable kept"
  fi
fi

# 3. A read-only and a full file system: small tmpfs mounts (root only).
mkdir -p "$work/ro" "$work/full"
if ! mount -t tmpfs -o ro,size=64k tmpfs "$work/ro" 2>/dev/null; then
  echo "skip read-only and full-disk cases: cannot mount a tmpfs here (not root)"
else
  mounts+=("$work/ro")
  checked_before_training=1
  expect save-read-only \
    "bitpipe: rank 0: error: --save: '$w/ro/ckpt\.safetensors' cannot be written: directory '$w/ro' is not writable \(Read-only file system\)" \
    "${train[@]}" --steps 2 --save "$work/ro/ckpt.safetensors"
  checked_before_training=0

  # 4 MiB: room for the old files, then filled to the last byte.
  mount -t tmpfs -o size=4m tmpfs "$work/full" && mounts+=("$work/full")
  full=$work/full
  wf=$(literal "$full")
  "$bin/bitpipe-import" --config "$root/examples/gpt-tiny.json" -o "$work/model.mlir"
  for f in model.mlir opt.mlir runtime.mlir model.o gpt tokens.bin \
    ckpt.safetensors trace.json; do
    echo "old $f" >"$full/$f"
    cp "$full/$f" "$work/$f.old"
  done
  mkdir "$full/dump" && echo "old rank0" >"$full/dump/rank0.safetensors"
  cp "$full/dump/rank0.safetensors" "$work/rank0.old"
  dd if=/dev/zero of="$full/filler" bs=4k 2>/dev/null
  nospace="No space left on device \(the previous '$wf/%s', if any, is unchanged\)"
  # shellcheck disable=SC2059
  expect full-import \
    "bitpipe-import: error: -o: cannot write '$wf/model\.mlir': $(printf "$nospace" 'model\.mlir')" \
    "$bin/bitpipe-import" --config "$root/examples/gpt-tiny.json" -o "$full/model.mlir"
  unchanged full-import "$full/model.mlir" "$work/model.mlir.old"
  # shellcheck disable=SC2059
  expect full-opt \
    "bitpipe-opt: error: -o: cannot write '$wf/opt\.mlir': $(printf "$nospace" 'opt\.mlir')" \
    "$bin/bitpipe-opt" "$work/model.mlir" -o "$full/opt.mlir"
  unchanged full-opt "$full/opt.mlir" "$work/opt.mlir.old"
  # shellcheck disable=SC2059
  expect full-compile-mlir \
    "bitpipe-compile: error: -o: cannot write '$wf/runtime\.mlir': $(printf "$nospace" 'runtime\.mlir')" \
    "$bin/bitpipe-compile" "$work/model.mlir" --devices 2 --schedule gpipe \
    --emit=mlir -o "$full/runtime.mlir"
  unchanged full-compile-mlir "$full/runtime.mlir" "$work/runtime.mlir.old"
  # shellcheck disable=SC2059
  expect full-compile-obj \
    "bitpipe-compile: error: -o: cannot write '$wf/model\.o': $(printf "$nospace" 'model\.o')" \
    "$bin/bitpipe-compile" "$work/model.mlir" --devices 2 --schedule gpipe \
    --emit=obj -o "$full/model.o"
  unchanged full-compile-obj "$full/model.o" "$work/model.o.old"
  # The linker writes the executable: it says why, we say what failed.
  expect full-compile-exe \
    "bitpipe-compile: error: -o: linking '$wf/gpt' failed \(.* exited with [1-9][0-9]*\); the previous '$wf/gpt', if any, is unchanged" \
    "$bin/bitpipe-compile" "$work/model.mlir" --devices 2 --schedule gpipe \
    -o "$full/gpt"
  unchanged full-compile-exe "$full/gpt" "$work/gpt.old"
  expect full-tokenize \
    "bitpipe-tokenize: -o: cannot write '$wf/tokens\.bin': No space left on device \(the previous '$wf/tokens\.bin', if any, is unchanged\)" \
    "$bin/bitpipe-tokenize" -o "$full/tokens.bin" /usr/share/common-licenses/GPL-3
  unchanged full-tokenize "$full/tokens.bin" "$work/tokens.bin.old"

  # The executable's targets: each fails naming its flag and the file.
  # shellcheck disable=SC2059
  expect full-save \
    "bitpipe: rank 0: error: --save: cannot write '$wf/ckpt\.safetensors': $(printf "$nospace" 'ckpt\.safetensors')" \
    "${train[@]}" --steps 1 --save "$full/ckpt.safetensors"
  unchanged full-save "$full/ckpt.safetensors" "$work/ckpt.safetensors.old"
  # shellcheck disable=SC2059
  expect full-trace \
    "bitpipe: rank 0: error: --trace: cannot write '$wf/trace\.json': $(printf "$nospace" 'trace\.json')" \
    "${train[@]}" --steps 1 --trace "$full/trace.json"
  unchanged full-trace "$full/trace.json" "$work/trace.json.old"
  expect full-dump-rank-params \
    "bitpipe: rank [01]: error: --dump-rank-params: cannot write '$wf/dump/rank[01]\.safetensors': No space left on device \(the previous '$wf/dump/rank[01]\.safetensors', if any, is unchanged\)" \
    "${train[@]}" --steps 1 --dump-rank-params "$full/dump"
  unchanged full-dump-rank-params "$full/dump/rank0.safetensors" "$work/rank0.old"
  # The metrics are a log, appended per step (StepLog.h says why): the
  # first line that does not fit stops the job.
  expect full-metrics \
    "bitpipe: rank 0: fatal: step 1: --metrics: cannot write '$wf/metrics\.jsonl': No space left on device" \
    "${train[@]}" --steps 3 --metrics "$full/metrics.jsonl"
fi

echo "outputs: $failures failure(s)"
[ $failures -eq 0 ]
