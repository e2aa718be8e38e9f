# shellcheck shell=bash
# table.sh: bench/gpu/check.sh's table, written as it goes (sourced, after
# budget.sh, whose clock stamps each row).
#
# Each row is printed the moment its check ends, and appended to the table
# file at once, so that when the whole command is killed the file still
# holds every row so far. A row: the seconds since the check began, the
# check, PASS / FAIL / SKIP / INFO / BELOW, and what it found; a row that
# is not a PASS ends with the log that holds the rest, as it is named
# inside logs.tar.gz.
table_file=""
table_counts=() # PASS FAIL SKIP INFO BELOW

table_start() { # FILE TITLE: a new table in FILE
  table_file=$1
  table_counts=(0 0 0 0 0)
  {
    echo "== $2"
    printf '%5s  %-30s %-6s %s\n' t check result detail
  } | tee "$table_file"
}

row() { # NAME RESULT DETAIL
  local line i
  line=$(printf '%4ss  %-30s %-6s %s' "$(budget_elapsed)" "$1" "$2" "$3")
  echo "$line"
  echo "$line" >>"$table_file"
  # A result that is none of the five counts as a failure of the check.
  case $2 in PASS) i=0 ;; SKIP) i=2 ;; INFO) i=3 ;; BELOW) i=4 ;; *) i=1 ;; esac
  table_counts[i]=$((table_counts[i] + 1))
}

table_failed() { [ "${table_counts[1]}" -gt 0 ]; }

table_totals() { # EXIT_STATUS: the last line, then the whole table again
  local elapsed
  elapsed=$(budget_elapsed)
  printf 'totals: %d PASS, %d FAIL, %d SKIP, %d INFO, %d BELOW; %dm%02ds of a %d s budget; exit %d\n' \
    "${table_counts[@]}" $((elapsed / 60)) $((elapsed % 60)) "$budget_total" "$1" >>"$table_file"
  echo
  cat "$table_file"
}

# row_stopped NAME LOGREF: the part was stopped at its grant (budget.sh's
# budget_limit). Stopped below its cap it had only its share of the
# budget: a SKIP. Stopped at its cap, it hung or is far slower than
# planned: a FAIL.
row_stopped() {
  if [ "$budget_limit" -lt "$budget_cap" ]; then
    row "$1" SKIP "time budget spent: stopped at its share, $budget_limit s of its $budget_cap s cap ($2)"
  else
    row "$1" FAIL "timed out after $budget_limit s ($2)"
  fi
}
