# shellcheck shell=bash
# budget.sh: the time budget of bench/gpu/check.sh (sourced; no output of
# its own).
#
# The check runs its parts one after another within one budget of wall
# time. Every part is planned up front, in the order the parts run, with a
# minimum (the least time in which it can do its work) and a cap (the most
# it may take: a part that hangs is stopped there). A part that starts is
# granted
#     min(cap, time left - the minimums of the parts planned after it)
# so that whatever the parts before it took, each later part keeps its
# minimum, as long as every part ends within its grant (`timeout` sees to
# that). A part whose grant would be under its minimum does not run: it is
# a SKIP "time budget spent: needs N s, M s left", not a FAIL. Parts planned
# before the one that starts no longer hold time, whether they ran or not.
#
# The clock is budget_now (whole seconds); a test replaces the function.
budget_now() { date +%s; }

budget_start() { # TOTAL: starts the clock, with an empty plan
  budget_total=$1
  budget_t0=$(budget_now)
  budget_keys=() budget_mins=() budget_caps=()
  budget_limit=0 budget_cap=0 budget_reason=""
}

budget_plan() { # KEY MIN CAP: the next part, in the order the parts run
  budget_keys+=("$1")
  budget_mins+=("$2")
  budget_caps+=("$3")
}

budget_elapsed() { echo $(($(budget_now) - budget_t0)); }

budget_minimums() { # the sum of every planned minimum
  local m sum=0
  for m in "${budget_mins[@]}"; do sum=$((sum + m)); done
  echo "$sum"
}

# budget_grant KEY: the part KEY starts. Sets budget_limit (its seconds)
# and budget_cap; returns 1 when it is starved and 2 when KEY is not in
# the plan, with the reason in budget_reason.
budget_grant() {
  local i at=-1 later=0 left
  for ((i = 0; i < ${#budget_keys[@]}; i++)); do
    if [ "$at" -ge 0 ]; then
      later=$((later + budget_mins[i]))
    elif [ "${budget_keys[i]}" = "$1" ]; then
      at=$i
    fi
  done
  if [ "$at" -lt 0 ]; then
    budget_reason="'$1' is not in the plan (bench/gpu/lib/parts.sh)"
    return 2
  fi
  left=$((budget_total - $(budget_elapsed) - later))
  budget_cap=${budget_caps[at]}
  if [ "$left" -lt "${budget_mins[at]}" ]; then
    budget_reason="time budget spent: needs ${budget_mins[at]} s, $((left > 0 ? left : 0)) s left"
    return 1
  fi
  budget_limit=$((left < budget_cap ? left : budget_cap))
}
