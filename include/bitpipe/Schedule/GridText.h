//===- GridText.h - The text grid of a schedule, both ways ------*- C++ -*-===//
//
// One line per rank, actions in execution order separated by single spaces:
//
//   P0: F0.s0 F1.s0 B0.s7 W0.s7 AR(4,7)
//
// The same spelling as Action::str() and the worked examples of
// docs/bitpipe-order.md, so that golden tests and lit tests show a schedule at a
// glance. Diagnostics print the same grid with marked steps. The parser reads
// that text back (tests, hand-written schedules, invalid inputs for the
// verifier) and names the line and token it rejects.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_GRIDTEXT_H
#define BITPIPE_SCHEDULE_GRIDTEXT_H

#include "bitpipe/Schedule/Error.h"
#include "bitpipe/Schedule/Schedule.h"

#include <string>
#include <vector>

namespace bitpipe::sched {

using RankPrograms = std::vector<std::vector<Action>>;

/// "P<rank>: a b c" (just "P<rank>:" when the list is empty), no newline.
/// The steps at `marked` indices are wrapped as `>>B3.s2<<`, which is how the
/// verifier points at the offending step inside the whole grid.
std::string formatRank(int rank, const std::vector<Action> &actions,
                       const std::vector<int> &marked = {});

/// Every rank's line, each ending with '\n'; the steps at `marks` (rank,
/// index) are wrapped as in formatRank. Marks outside the grid are ignored.
std::string formatGrid(const RankPrograms &ranks,
                       const std::vector<ActionSite> &marks = {});
std::string formatGrid(const Schedule &schedule,
                       const std::vector<ActionSite> &marks = {});

/// Parses one token: "F<mb>.s<stage>", "B..", "W..", "AR(<s>,<s>,...)".
/// Numbers are non-negative decimals; AR lists at least one stage.
Result<Action> parseAction(const std::string &token);

/// Parses a grid. Blank lines are skipped; every other line is
/// "P<rank>:" followed by tokens. The ranks must be 0..R-1, each once, in
/// order. Errors say "line L: ..." and, for a bad action, "token T '...'"
/// (both 1-based).
Result<RankPrograms> parseGrid(const std::string &text);

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_GRIDTEXT_H
