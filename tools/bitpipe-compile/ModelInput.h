//===- ModelInput.h - The model bitpipe-compile starts from -----*- C++ -*-===//
//
// bitpipe-compile takes a model as IR (text or bytecode, vetted by
// ToolInput.h before MLIR parses it) or as a JSON configuration that it
// builds the IR from, as bitpipe-import would.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_TOOLS_BITPIPE_COMPILE_MODELINPUT_H
#define BITPIPE_TOOLS_BITPIPE_COMPILE_MODELINPUT_H

#include "bitpipe/Import/ModelBuilder.h"
#include "bitpipe/Import/ModelConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/ADT/StringRef.h"

#include <string>

namespace bitpipe::compile {

/// The model IR of \p path: built from a JSON configuration (`.json`), or
/// parsed. Null, with \p error set (naming the file), when it cannot be had;
/// parse errors are also reported through \p context's diagnostic handler.
/// \p overrides (the sequence length, the micro-batch size) apply to a
/// configuration only: model IR fixes both in its types, and asking it for
/// others is an error. So do \p units (the ops' nn.layer numbering), where
/// they are not the default whole layers.
mlir::OwningOpRef<mlir::ModuleOp>
loadModel(mlir::MLIRContext &context, llvm::StringRef path,
          const ModelConfigOverrides &overrides, PartitionUnits units,
          std::string &error);

} // namespace bitpipe::compile

#endif // BITPIPE_TOOLS_BITPIPE_COMPILE_MODELINPUT_H
