//===- Describe.h - Actions in words ----------------------------*- C++ -*-===//
//
// Diagnostics of the verifier and the simulator say what went wrong in words
// ("backward of stage 2 for micro-batch 3"), not only in grid notation.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_DESCRIBE_H
#define BITPIPE_SCHEDULE_DESCRIBE_H

#include "bitpipe/Schedule/Schedule.h"

#include <string>
#include <vector>

namespace bitpipe::sched {

/// "forward of stage 1 for micro-batch 3", "weight gradient of stage 0 for
/// micro-batch 2", "all-reduce of stages 4,7".
std::string describe(const Action &action);

/// "1st", "2nd", "3rd", "11th", ... (k counts from 1).
std::string ordinal(int k);

/// "1 micro-batch", "3 micro-batches": `n` and the noun in the right number.
std::string quantity(int n, const std::string &singular,
                     const std::string &plural);

/// "{0,3}".
std::string formatSet(const std::vector<int> &values);

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_DESCRIBE_H
