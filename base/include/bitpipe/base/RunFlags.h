//===- RunFlags.h - The executable's flags the compiler's tools name -*- C++
//-*-===//
//
// A compiled executable's run flags are parsed by the runtime
// (runtime/lib/exec/Options.cpp); a few are also written by the compiler's
// tools into what they tell the user to run (bitpipe-plan's report). Those
// are spelled here once, so that the advice names the flag the executable
// takes.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_BASE_RUNFLAGS_H
#define BITPIPE_BASE_RUNFLAGS_H

namespace bitpipe::base::run_flag {

/// AdamW's moments sharded across a parameter's replicas
/// (docs/data-parallel.md, "Sharded optimizer").
inline constexpr char kShardOptimizer[] = "--shard-optimizer";

} // namespace bitpipe::base::run_flag

#endif // BITPIPE_BASE_RUNFLAGS_H
