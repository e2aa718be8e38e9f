//===- AtomicFile.h - Write a file readers never see half of ----*- C++ -*-===//
//
// The one writer of every file a bitpipe tool writes: checkpoints, traces,
// token files, and the compiler tools' IR, objects and executables
// (docs/files.md). A regular-file destination is written to
// "<path>.tmp.<pid>" in its own directory (so the rename stays within one
// file system); every write, the fsync and the close are checked; the
// temporary is renamed over the destination only when all of them
// succeeded, and the directory is fsynced. A crash, a full disk or a signal
// at any point leaves the old file as it was, never a truncated mix, and no
// temporary: it is removed on failure, on destruction, and by the handler
// of SIGINT/SIGTERM (TempFileCleanup.h). Temporaries of killed runs (their
// process no longer runs) are removed at the next write to the same
// destination, with a note on stderr.
//
// Which destinations are written how, and which are refused, is
// OutputDestination.h's rule: "-", /dev/stdout, character devices and FIFOs
// are written into; directories, symbolic links (but those to a stream), block
// devices and sockets are refused.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_BASE_ATOMICFILE_H
#define BITPIPE_BASE_ATOMICFILE_H

#include "bitpipe/base/OutputDestination.h"
#include "bitpipe/base/Status.h"
#include "bitpipe/base/TempFileCleanup.h"

#include <cstddef>
#include <string>

namespace bitpipe::base {

class AtomicFileWriter {
public:
  /// Checks \p path (checkOutputDestination), removes stale temporaries of
  /// it, and creates "<path>.tmp.<pid>" next to it, or opens the stream.
  static Expected<AtomicFileWriter> open(const std::string &path);

  AtomicFileWriter(AtomicFileWriter &&other) noexcept;
  AtomicFileWriter &operator=(AtomicFileWriter &&) = delete;
  AtomicFileWriter(const AtomicFileWriter &) = delete;
  /// Removes the temporary file unless commit() succeeded.
  ~AtomicFileWriter();

  /// Writes all of \p data, or fails naming the destination.
  Status write(const void *data, size_t bytes);

  /// For content another program writes (a linker's -o tempPath()):
  /// closes this writer's descriptor, checked. File destinations only.
  Status closeForExternalWriter();

  /// fsync and close (checked), check the destination again, rename over
  /// it, fsync the directory. A stream is closed (checked). On failure the
  /// temporary is removed and the destination is as it was.
  Status commit();

  OutputKind kind() const { return kind_; }
  const std::string &path() const { return path_; }
  /// "<path>.tmp.<pid>"; empty for a stream.
  const std::string &tempPath() const { return temp_.path(); }

private:
  AtomicFileWriter(std::string path, OutputKind kind, int fd,
                   RemovedTemporary temp)
      : path_(std::move(path)), kind_(kind), fd_(fd), temp_(std::move(temp)) {}

  /// Closes the descriptor and removes the temporary: the destination
  /// stays as it was.
  void discard();
  /// discard(), and \p message (complete) as an error, saying so.
  Status failed(std::string message);
  /// failed("cannot write '<path>': <what>: <errno's text>").
  Status fail(const std::string &what);

  std::string path_;
  OutputKind kind_;
  int fd_ = -1;
  bool externalWriter_ = false;
  RemovedTemporary temp_;
};

/// Writes \p bytes of \p data to \p path atomically.
Status writeFileAtomically(const std::string &path, const void *data,
                           size_t bytes);

/// write(2) until all of \p data is written, retrying interrupted and
/// partial writes; an error names \p name (the file the user asked for).
Status writeAll(int fd, const void *data, size_t bytes,
                const std::string &name);

/// Removes "<path>.tmp.<pid>" regular files whose process no longer runs on
/// this machine (left by a killed run), each with a note on stderr. Returns
/// how many were removed.
int removeStaleTemporaries(const std::string &path);

} // namespace bitpipe::base

#endif // BITPIPE_BASE_ATOMICFILE_H
