//===- HuggingFaceCheckpoint.h - --load and --save-hf of HF files -*- C++ -*-===//
//
// The executable's side of Hugging Face checkpoints (docs/huggingface.md):
// the model's sizes come from the manifest ("model": family, vocab, heads,
// max_positions, norm_epsilon, rope_theta) and from the parameters' shapes
// (layers, hidden, kv_heads, intermediate size, an untied head); the names
// and layouts from train/HuggingFace.h, the one correspondence both
// directions use.
//
// Loading: every rank checks the whole checkpoint's headers (so every rank
// reports the same missing or mis-shaped tensor) and reads only the
// parameters it holds. The weights are checked finite, like a bitpipe
// checkpoint's; AdamW's moments stay zero and the run starts at step 0
// with its own --seed: a Hugging Face file is a starting point, not a run
// to resume.
//
// Saving: rank 0 gathers the weights (exec/ModelCheckpoint.h) and writes
// DIR/model.safetensors and DIR/config.json.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_EXEC_HUGGINGFACECHECKPOINT_H
#define BITPIPE_RUNTIME_EXEC_HUGGINGFACECHECKPOINT_H

#include "Manifest.h"
#include "ParamStore.h"
#include "comm/Communicator.h"
#include "train/HuggingFace.h"

#include <string>

namespace bitpipe::runtime {

/// The Hugging Face sizes of the manifest's model, and its mapping, checked
/// to cover exactly the manifest's parameters with their shapes. Fails,
/// naming the manifest field or the parameter, for a model the mapping
/// cannot describe (a manifest without "heads", hand-written IR).
Expected<HfModelSizes> manifestHfSizes(const Manifest &manifest);
Expected<HfMapping> manifestHfMapping(const Manifest &manifest);

/// Loads this rank's parameters from the Hugging Face checkpoint \p path
/// (a safetensors file or an index) into the host image of \p store.
Status loadHuggingFaceWeights(const Manifest &manifest, ParamStore &store,
                              const std::string &path);

/// Collective. Rank 0 writes DIR/model.safetensors and DIR/config.json;
/// the status is rank 0's (agree on it).
Status saveHuggingFace(Communicator &comm, const Manifest &manifest,
                       ParamStore &store, const std::string &dir);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_EXEC_HUGGINGFACECHECKPOINT_H
