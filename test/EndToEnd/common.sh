# Shared by the end-to-end scripts (sourced): the tools, mpirun's flags, the
# corpus, the flags every run of a test uses and the CUDA device check.
bin=${BITPIPE_BIN:?set BITPIPE_BIN to the bin directory of the build}
python=${BITPIPE_PYTHON:-python3}
reference_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/reference
seed=20261130
base_flags=(--seed "$seed" --lr 1e-3 --timeout 120)

# mpirun as root and with more ranks than cores (the CI machine has 2).
mpirun_flags=(--oversubscribe --bind-to none -x OPENBLAS_NUM_THREADS=1)
[ "$(id -u)" = 0 ] && mpirun_flags+=(--allow-run-as-root)
# Open MPI's session directories in a folder of this script's own: jobs
# run side by side (ctest -j) share /tmp/ompi.<host>.<uid> otherwise, and
# one removing it as the next creates its folder there fails the next at
# start ("A call to mkdir was unable to create the desired directory").
ompi_session_base=$(mktemp -d "${TMPDIR:-/tmp}/bitpipe-ompi.XXXXXX")
trap 'rm -rf "$ompi_session_base"' EXIT
mpirun_flags+=(--mca orte_tmpdir_base "$ompi_session_base")

# Exits 77 (ctest's SKIP_RETURN_CODE) with the reason when there is no
# usable CUDA device; prints the device otherwise.
require_device() {
  local probe=$bin/bitpipe-gpu-probe reason
  if [ ! -x "$probe" ]; then
    echo "SKIPPED: no $probe (bitpipe was built without CUDA)"
    exit 77
  fi
  if ! reason=$("$probe"); then
    echo "SKIPPED: $reason"
    exit 77
  fi
  echo "device: $reason"
}

tokens() { # the corpus: Debian's license texts, as byte tokens
  local out=$1/tokens.bin
  [ -f "$out" ] || "$bin/bitpipe-tokenize" -o "$out" /usr/share/common-licenses/* >/dev/null
  echo "$out"
}

# A directory-name suffix for a list of run flags ("" for none):
# --max-grad-norm 0.5 -> -max-grad-norm-0.5.
flags_tag() {
  local tag=""
  for f in "$@"; do tag+=-${f#--}; done
  echo "${tag//[^A-Za-z0-9._-]/_}"
}

# run NP EXE FLAGS...: one process when NP is 1, else mpirun.
run() {
  local np=$1
  shift
  if [ "$np" = 1 ]; then
    OPENBLAS_NUM_THREADS=1 "$@"
  else
    mpirun "${mpirun_flags[@]}" -np "$np" "$@"
  fi
}
