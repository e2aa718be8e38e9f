# Shared by the fault scripts (sourced; faults.sh, numeric-faults.sh):
# mpirun's flags, and expect_failure, which runs a command that must fail
# as a user would and then with every rank left to its own end. Needs
# $work (the script's directory of logs).
mpirun_flags=(--oversubscribe --bind-to none -x OPENBLAS_NUM_THREADS=1)
[ "$(id -u)" = 0 ] && mpirun_flags+=(--allow-run-as-root)
# Session directories of its own, as common.sh says why.
ompi_session_base=$(mktemp -d "${TMPDIR:-/tmp}/bitpipe-ompi.XXXXXX")
trap 'rm -rf "$ompi_session_base"' EXIT
mpirun_flags+=(--mca orte_tmpdir_base "$ompi_session_base")
# mpirun's default is to kill every rank as soon as one exits non-zero or
# dies. That hides whether the other ranks stop by themselves, and it would
# kill the survivor of a dead peer before its own timeout could fire. With
# orte_abort_on_non_zero_status=0 every rank runs to its own end (but
# mpirun then exits 0 when the ranks merely exit non-zero).
own_end=(--mca orte_abort_on_non_zero_status 0)
failures=0

fail() {
  echo "FAIL $1: $2"
  [ -n "${3:-}" ] && sed 's/^/    /' "$3" | head -20
  failures=$((failures + 1))
}

# The extended regular expression that matches the string $1 literally.
literal() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|]/\\&/g'; }
w=$(literal "$work")

# Each rank runs under this wrapper, which says how the rank ended.
rank_wrapper=(bash -c '"$@"; rc=$?
  echo "faults: rank ${OMPI_COMM_WORLD_RANK:-?} exited with status $rc"
  exit $rc' rank)

# expect_failure NAME NP PATTERN COMMAND...: COMMAND on NP ranks, run as a
# user runs it, exits non-zero within 120 s, and one line of its output is
# exactly PATTERN (an extended regular expression); run again with every
# rank left to its own end, every rank exits non-zero by itself within 120 s.
expect_failure() {
  local name=$1 np=$2 pattern=$3
  shift 3
  local log=$work/$name.log ranks=$work/$name.ranks.log rc r bad=""
  timeout 120 mpirun "${mpirun_flags[@]}" -np "$np" "$@" >"$log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    fail "$name" "exited 0" "$log"; return
  elif [ $rc -eq 124 ]; then
    fail "$name" "still running after 120 s" "$log"; return
  elif ! grep -Eqx "$pattern" "$log"; then
    fail "$name" "exit $rc, but no line is /$pattern/" "$log"; return
  fi
  timeout 120 mpirun "${mpirun_flags[@]}" "${own_end[@]}" -np "$np" \
    "${rank_wrapper[@]}" "$@" >"$ranks" 2>&1
  for ((r = 0; r < np; ++r)); do
    grep -Eqx "faults: rank $r exited with status [1-9][0-9]*" "$ranks" ||
      bad+=" $r"
  done
  if [ -n "$bad" ]; then
    fail "$name" "rank(s)$bad did not exit non-zero by themselves" "$ranks"
  else
    echo "ok   $name: exit $rc, every rank non-zero: $(grep -Exm1 "$pattern" "$log")"
  fi
}

