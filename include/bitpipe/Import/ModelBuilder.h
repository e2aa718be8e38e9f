//===- ModelBuilder.h - Model IR for GPT- and BERT-style models -*- C++ -*-===//
//
// Builds the model IR that every bitpipe pass starts from: one `func.func`
// that takes the parameters and one micro-batch (tokens, labels) and returns
// the loss, written with `nn` ops.
//
// Conventions the later passes rely on:
//   * parameters come first, each with `nn.param = "<name>"` and
//     `nn.init = #nn.init<normal, std = ...>` (or `<zeros>`, `<ones>`); then
//     the inputs, with `nn.input = "tokens"` and `nn.input = "labels"`;
//   * every op carries `nn.layer = k`, the partition unit it belongs to
//     (the partitioner cuts only between units): with PartitionUnits::Layers
//     0 for the embedding, 1..L for the transformer layers, L+1 for the
//     head (final norm, output projection, loss); with ::Halves each layer
//     i is two units, its attention half 2i+1 (norm, attention, projection,
//     residual add) and its MLP half 2i+2, and the head is 2L+1;
//   * the function carries `nn.model = #nn.model<...>`, the configuration.
// (NNAttrNames.h names the attributes; NNAttrs.td defines their values.)
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_IMPORT_MODELBUILDER_H
#define BITPIPE_IMPORT_MODELBUILDER_H

#include "bitpipe/Import/ModelConfig.h"

#include "bitpipe/Schedule/Partition.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace bitpipe {

using sched::PartitionUnits;

/// A module holding the model function of `config`, its ops numbered in
/// \p units.
mlir::OwningOpRef<mlir::ModuleOp>
buildModel(mlir::MLIRContext &context, const ModelConfig &config,
           PartitionUnits units = PartitionUnits::Layers);

} // namespace bitpipe

#endif // BITPIPE_IMPORT_MODELBUILDER_H
