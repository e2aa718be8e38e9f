//===- bitpipe-tblgen.cpp - bitpipe's TableGen backends -------------------===//
//
// mlir-tblgen with bitpipe's own backends registered (each a
// mlir::GenRegistration in this directory): -gen-nn-kernel-lowerings.
//
//===----------------------------------------------------------------------===//

#include "mlir/Tools/mlir-tblgen/MlirTblgenMain.h"

int main(int argc, char **argv) { return mlir::MlirTblgenMain(argc, argv); }
