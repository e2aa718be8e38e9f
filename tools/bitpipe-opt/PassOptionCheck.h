//===- PassOptionCheck.h - Pass options checked by name ---------*- C++ -*-===//
//
// MLIR refuses a pass option it does not know with "no such option X" and
// nothing more. bitpipe-opt checks every `--<pass>=<options>` and
// `--<pipeline>=<options>` of its command line first and names, for an
// unknown option, the closest valid one and all of them.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_TOOLS_BITPIPE_OPT_PASSOPTIONCHECK_H
#define BITPIPE_TOOLS_BITPIPE_OPT_PASSOPTIONCHECK_H

#include "llvm/Support/Error.h"

namespace bitpipe {

/// The first option in \p argv's pass and pipeline arguments that its pass
/// or pipeline does not take, as an error: "--bitpipe-pipeline: no such
/// option 'device' (did you mean 'devices'?); its options: ...". Passes and
/// pipelines are looked up in MLIR's registry (register them first);
/// `--pass-pipeline` and pipelines other than bitpipe's are left to MLIR.
llvm::Error checkPassOptionNames(int argc, char **argv);

} // namespace bitpipe

#endif // BITPIPE_TOOLS_BITPIPE_OPT_PASSOPTIONCHECK_H
