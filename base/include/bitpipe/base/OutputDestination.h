//===- OutputDestination.h - What an output path may be ---------*- C++ -*-===//
//
// The rule every bitpipe tool applies to a path it is told to write
// (docs/files.md):
//
//  - a regular file, or a name that does not exist yet in an existing,
//    writable directory: written to "<path>.tmp.<pid>" and renamed over it
//    (AtomicFile.h), so the old file stays whole until the new one is;
//  - "-" (standard output) and the names of open descriptors (/dev/stdout,
//    /dev/stderr, /dev/fd/N, /proc/self/fd/N), a character device
//    (/dev/null, a terminal) or a FIFO, also when named through a symbolic
//    link: written into, as a stream; nothing is created or replaced;
//  - anything else is refused, before any work is done, with what it is:
//    a directory, a symbolic link to a regular file, a directory or nothing
//    (replacing the link would break it; writing through it would bypass
//    the atomic replacement of its target, so the user names the target),
//    a block device, a socket.
//
// Nothing that is not a regular file is ever replaced by a regular file.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_BASE_OUTPUTDESTINATION_H
#define BITPIPE_BASE_OUTPUTDESTINATION_H

#include "bitpipe/base/Status.h"

#include <string>

namespace bitpipe::base {

enum class OutputKind {
  /// Replaced atomically through a temporary next to it.
  File,
  /// Written into as it is: standard output, a character device, a FIFO.
  Stream,
};

/// Classifies \p path by the rule above. The error says what the path is
/// and why it cannot be written ("'out' is a directory; ..."); callers
/// prefix the option that named it.
Expected<OutputKind> checkOutputDestination(const std::string &path);

/// The directory that holds \p path ("." for a bare name).
std::string parentDirectory(const std::string &path);

/// The open descriptor \p path names, -1 for none: "-" and /dev/stdout are
/// 1, /dev/stderr 2, /dev/fd/N and /proc/self/fd/N are N. Such a path is a
/// stream whatever the descriptor is (`-o /dev/stdout > out.mlir` is the
/// shell's regular file, and stays the shell's).
int descriptorNamedBy(const std::string &path);

/// Opens a Stream destination (checkOutputDestination) for writing: a
/// descriptor name is duplicated, so that the shell's redirection (its
/// offset, its append mode) holds; a device or a FIFO is opened without
/// creating or truncating anything, and must still be one once open.
Expected<int> openOutputStream(const std::string &path);

} // namespace bitpipe::base

#endif // BITPIPE_BASE_OUTPUTDESTINATION_H
