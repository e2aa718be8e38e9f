//===- AtomicFile.h - Write a file so readers never see half of it -*- C++ -*-===//
//
// Checkpoints and traces are written to a temporary file in the destination's
// directory (so the rename stays within one file system), fsynced, renamed
// over the destination, and the directory fsynced. A crash at any point
// leaves either the old file or the new one, never a truncated mix.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_ATOMICFILE_H
#define BITPIPE_RUNTIME_CORE_ATOMICFILE_H

#include "Status.h"

#include <cstddef>
#include <string>

namespace bitpipe::runtime {

class AtomicFileWriter {
public:
  /// Creates "<path>.tmp.<pid>" next to \p path.
  static Expected<AtomicFileWriter> open(const std::string &path);

  AtomicFileWriter(AtomicFileWriter &&other) noexcept;
  AtomicFileWriter &operator=(AtomicFileWriter &&) = delete;
  AtomicFileWriter(const AtomicFileWriter &) = delete;
  /// Removes the temporary file unless commit() succeeded.
  ~AtomicFileWriter();

  Status write(const void *data, size_t bytes);
  /// fsync, rename over the destination, fsync the directory.
  Status commit();

  const std::string &tempPath() const { return tmpPath_; }

private:
  AtomicFileWriter(std::string path, std::string tmpPath, int fd)
      : path_(std::move(path)), tmpPath_(std::move(tmpPath)), fd_(fd) {}

  std::string path_;
  std::string tmpPath_;
  int fd_ = -1;
  bool committed_ = false;
};

/// Writes \p bytes of \p data to \p path atomically.
Status writeFileAtomically(const std::string &path, const void *data,
                           size_t bytes);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CORE_ATOMICFILE_H
