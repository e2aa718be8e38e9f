//===- AtomicFile.cpp - Write a file so readers never see half of it -*- C++ -*-===//

#include "AtomicFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace bitpipe::runtime {

static Status ioError(const std::string &what, const std::string &path) {
  return Status::error(ErrorCode::IoError,
                       what + " '" + path + "': " + std::strerror(errno));
}

Expected<AtomicFileWriter> AtomicFileWriter::open(const std::string &path) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return ioError("cannot create", tmp);
  return AtomicFileWriter(path, tmp, fd);
}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter &&other) noexcept
    : path_(std::move(other.path_)), tmpPath_(std::move(other.tmpPath_)),
      fd_(other.fd_), committed_(other.committed_) {
  other.fd_ = -1;
  other.committed_ = true; // the moved-from object must not unlink
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0)
    ::close(fd_);
  if (!committed_)
    ::unlink(tmpPath_.c_str());
}

Status AtomicFileWriter::write(const void *data, size_t bytes) {
  const char *p = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd_, p, bytes);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return ioError("cannot write", tmpPath_);
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return Status::ok();
}

Status AtomicFileWriter::commit() {
  if (::fsync(fd_) != 0)
    return ioError("cannot fsync", tmpPath_);
  if (::close(fd_) != 0) {
    fd_ = -1;
    return ioError("cannot close", tmpPath_);
  }
  fd_ = -1;
  if (::rename(tmpPath_.c_str(), path_.c_str()) != 0)
    return ioError("cannot rename '" + tmpPath_ + "' to", path_);
  committed_ = true;
  // The rename is durable only once the directory entry is on disk.
  std::string dir = ".";
  size_t slash = path_.rfind('/');
  if (slash != std::string::npos)
    dir = slash == 0 ? "/" : path_.substr(0, slash);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return Status::ok();
}

Status writeFileAtomically(const std::string &path, const void *data,
                           size_t bytes) {
  Expected<AtomicFileWriter> w = AtomicFileWriter::open(path);
  if (!w.isOk())
    return w.status();
  Status s = w->write(data, bytes);
  if (!s.isOk())
    return s;
  return w->commit();
}

} // namespace bitpipe::runtime
