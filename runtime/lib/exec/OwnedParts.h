//===- OwnedParts.h - A sharded optimizer's compact state, in host memory -===//
//
// Under a sharded optimizer (docs/data-parallel.md, "Sharded optimizer") a
// rank keeps AdamW's state of the parts it owns (ParamLayout::owned)
// compactly, part after part, while checkpoints and the stage functions
// see the layout's whole arrays. These two copies move host images
// between the two forms: ParamStore for the moments on every target, and
// a device target's store for master weights it keeps sharded too.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_EXEC_OWNEDPARTS_H
#define BITPIPE_RUNTIME_EXEC_OWNEDPARTS_H

#include "Backend.h"

namespace bitpipe::runtime {

/// Each owned part of \p whole (layout.numFloats floats, layout order) to
/// its place in \p compact (layout.numMoments floats).
void compactOwnedParts(const ParamLayout &layout, const float *whole,
                       float *compact);

/// Each owned part of \p compact to its place in \p whole; the elements
/// of \p whole that the rank does not own are left as they are.
void expandOwnedParts(const ParamLayout &layout, const float *compact,
                      float *whole);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_EXEC_OWNEDPARTS_H
