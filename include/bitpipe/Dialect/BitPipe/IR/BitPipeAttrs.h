//===- BitPipeAttrs.h - bitpipe attributes and enums ------------*- C++ -*-===//

#ifndef BITPIPE_DIALECT_BITPIPE_IR_BITPIPEATTRS_H
#define BITPIPE_DIALECT_BITPIPE_IR_BITPIPEATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"

#include "bitpipe/Schedule/GradientSync.h"
#include "bitpipe/Schedule/Recompute.h"
#include "bitpipe/Schedule/Schedule.h"
#include "bitpipe/Schedule/Transport.h"

#include "bitpipe/Dialect/BitPipe/IR/BitPipeEnums.h.inc"

namespace bitpipe::bp {
/// Custom parameter parsers and printers of #bitpipe.placement.
mlir::FailureOr<sched::PlacementKind>
parsePlacementKind(mlir::AsmParser &parser);
mlir::FailureOr<llvm::SmallVector<mlir::DenseI64ArrayAttr>>
parsePipelines(mlir::AsmParser &parser);
/// A #bitpipe.partition's balance: a floating-point number.
mlir::FailureOr<llvm::APFloat> parseRatio(mlir::AsmParser &parser);
void printRatio(mlir::AsmPrinter &printer, const llvm::APFloat &value);
void printPipelines(mlir::AsmPrinter &printer,
                    llvm::ArrayRef<mlir::DenseI64ArrayAttr> pipelines);

/// Custom parameter parsers and printers of #bitpipe.schedule.
mlir::FailureOr<bool> parseBool(mlir::AsmParser &parser);
mlir::FailureOr<llvm::SmallVector<int64_t>>
parseIntList(mlir::AsmParser &parser);
void printIntList(mlir::AsmPrinter &printer, llvm::ArrayRef<int64_t> values);

/// The parameter of #bitpipe.transfer_streams: a keyword the schedule
/// library names (sched::transferStreamsName).
mlir::FailureOr<sched::TransferStreams>
parseTransferStreams(mlir::AsmParser &parser);
/// The parameter of #bitpipe.gradient_sync: a keyword the schedule library
/// names (sched::gradientSyncName).
mlir::FailureOr<sched::GradientSync> parseGradientSync(mlir::AsmParser &parser);
/// A recomputation mode by its name (none, selective, full).
mlir::FailureOr<sched::Recompute> parseRecompute(mlir::AsmParser &parser);
} // namespace bitpipe::bp

#define GET_ATTRDEF_CLASSES
#include "bitpipe/Dialect/BitPipe/IR/BitPipeAttrs.h.inc"

#endif // BITPIPE_DIALECT_BITPIPE_IR_BITPIPEATTRS_H
