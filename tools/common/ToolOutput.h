//===- ToolOutput.h - How the compiler tools write files --------*- C++ -*-===//
//
// bitpipe-import, bitpipe-opt and bitpipe-compile write every output (IR,
// objects, executables) through the base library's writer,
// bitpipe/base/AtomicFile.h: the one implementation of the rule of
// docs/files.md. A regular file is replaced only once every byte is
// written, fsynced and closed (else it is left as it was and the temporary
// is removed, also on SIGINT/SIGTERM); "-", /dev/null, a FIFO are written
// into; a directory, a symbolic link, a block device is refused. This file
// only adapts it to llvm::raw_ostream and llvm::Error.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_TOOLS_COMMON_TOOLOUTPUT_H
#define BITPIPE_TOOLS_COMMON_TOOLOUTPUT_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace bitpipe {

/// Whether \p path may be written (docs/files.md), checked before the tool
/// does any work. The error says what \p path is and why not.
llvm::Error checkOutputPath(llvm::StringRef path);

/// Writes what \p print prints to \p path.
llvm::Error writeOutputFile(llvm::StringRef path,
                            llvm::function_ref<void(llvm::raw_ostream &)> print);

/// For a producer that may still fail once it has begun to print (a pass
/// pipeline whose printer runs last): \p print returns false to abandon the
/// output, and then a regular file is left as it was and a stream gets
/// nothing. A regular file's text goes straight into its temporary, not
/// through memory first (17 MB for a 126-layer pipeline's programs); a
/// stream's is held until \p print succeeds. Returns whether it wrote.
llvm::Expected<bool> writeOutputFileUnlessAbandoned(
    llvm::StringRef path, llvm::function_ref<bool(llvm::raw_ostream &)> print);

/// For a file another program writes (a linker): \p produce must create the
/// file at the path it is given; that file then replaces \p path as
/// writeOutputFile's would. When \p path is a stream, the program writes a
/// scratch file, which is then copied into the stream.
llvm::Error writeOutputFileFrom(
    llvm::StringRef path,
    llvm::function_ref<llvm::Error(llvm::StringRef file)> produce);

/// Runs \p use on a new, empty scratch file (in the system's temporary
/// directory), removed afterwards, on failure and on SIGINT/SIGTERM.
llvm::Error
withScratchFile(llvm::StringRef prefix, llvm::StringRef suffix,
                llvm::function_ref<llvm::Error(llvm::StringRef path)> use);

} // namespace bitpipe

#endif // BITPIPE_TOOLS_COMMON_TOOLOUTPUT_H
