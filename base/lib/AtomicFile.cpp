//===- AtomicFile.cpp - Write a file so readers never see half of it ------===//

#include "bitpipe/base/AtomicFile.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace bitpipe::base {

namespace {

std::string tempPathOf(const std::string &path, long pid) {
  return path + ".tmp." + std::to_string(pid);
}

std::string errnoText(int err) { return std::strerror(err); }

/// Creates the temporary. Our own pid's name can only exist if an earlier
/// process with the same pid (a container restarted) left it: replace it.
int createTemporary(const std::string &tmp) {
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::open(tmp.c_str(), flags, 0666);
  if (fd < 0 && errno == EEXIST && ::unlink(tmp.c_str()) == 0)
    fd = ::open(tmp.c_str(), flags, 0666);
  return fd;
}

} // namespace

Status writeAll(int fd, const void *data, size_t bytes,
                const std::string &name) {
  const char *p = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd, p, bytes);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return Status::error(ErrorCode::IoError,
                           "cannot write '" + name + "': " +
                               (n < 0
                                    ? errnoText(errno)
                                    : std::string("the write wrote nothing")));
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return Status::ok();
}

int removeStaleTemporaries(const std::string &path) {
  std::string dir = parentDirectory(path);
  size_t slash = path.find_last_of('/');
  std::string prefix =
      (slash == std::string::npos ? path : path.substr(slash + 1)) + ".tmp.";
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return 0;
  int removed = 0;
  while (const struct dirent *e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix))
      continue;
    std::string digits = name.substr(prefix.size());
    if (digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    long pid = std::stol(digits);
    // A running process (ours, or another run writing the same file now) is
    // left alone; kill(pid, 0) fails with ESRCH only for a pid that is gone.
    if (pid <= 0 || pid == ::getpid() ||
        !(::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH))
      continue;
    std::string stale = slash == std::string::npos ? name
                        : dir == "/"               ? "/" + name
                                                   : dir + "/" + name;
    struct stat st;
    if (::lstat(stale.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (::unlink(stale.c_str()) == 0) {
      ++removed;
      std::fprintf(stderr,
                   "note: removed '%s', a temporary file left by process %ld, "
                   "which no longer runs (an interrupted write of '%s')\n",
                   stale.c_str(), pid, path.c_str());
    }
  }
  ::closedir(d);
  return removed;
}

Expected<AtomicFileWriter> AtomicFileWriter::open(const std::string &path) {
  Expected<OutputKind> kind = checkOutputDestination(path);
  if (!kind.isOk())
    return kind.status();
  if (*kind == OutputKind::Stream) {
    Expected<int> fd = openOutputStream(path);
    if (!fd.isOk())
      return fd.status();
    return AtomicFileWriter(path, OutputKind::Stream, *fd, RemovedTemporary());
  }
  removeStaleTemporaries(path);
  // Registered before it exists, so that no signal can leave it behind.
  RemovedTemporary temp(tempPathOf(path, ::getpid()));
  int fd = createTemporary(temp.path());
  if (fd < 0) {
    int err = errno;
    temp.release(); // not ours: never created
    return Status::error(ErrorCode::IoError, "cannot write '" + path +
                                                 "': cannot create its "
                                                 "temporary '" +
                                                 tempPathOf(path, ::getpid()) +
                                                 "': " + errnoText(err));
  }
  return AtomicFileWriter(path, OutputKind::File, fd, std::move(temp));
}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter &&other) noexcept
    : path_(std::move(other.path_)), kind_(other.kind_), fd_(other.fd_),
      externalWriter_(other.externalWriter_), temp_(std::move(other.temp_)) {
  other.fd_ = -1;
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0)
    ::close(fd_);
  // temp_'s destructor removes the temporary unless commit() released it.
}

void AtomicFileWriter::discard() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
  temp_.remove();
}

Status AtomicFileWriter::failed(std::string message) {
  discard();
  if (kind_ == OutputKind::File)
    message += " (the previous '" + path_ + "', if any, is unchanged)";
  return Status::error(ErrorCode::IoError, message);
}

Status AtomicFileWriter::fail(const std::string &what) {
  int err = errno;
  std::string message = "cannot write '" + path_ + "': " + what;
  if (err)
    message += ": " + errnoText(err);
  return failed(message);
}

Status AtomicFileWriter::write(const void *data, size_t bytes) {
  if (fd_ < 0) {
    errno = 0;
    return fail("it is closed");
  }
  Status s = writeAll(fd_, data, bytes, path_);
  return s.isOk() ? s : failed(s.message());
}

Status AtomicFileWriter::closeForExternalWriter() {
  if (kind_ != OutputKind::File)
    return Status::error(ErrorCode::InvalidArgument,
                         "'" + path_ +
                             "' is not a regular file: another "
                             "program cannot write it through a temporary");
  int fd = fd_;
  fd_ = -1;
  errno = 0;
  if (fd >= 0 && ::close(fd) != 0)
    return fail("cannot close its temporary '" + tempPath() + "'");
  externalWriter_ = true;
  return Status::ok();
}

Status AtomicFileWriter::commit() {
  errno = 0;
  if (kind_ == OutputKind::Stream) {
    int fd = fd_;
    fd_ = -1;
    if (fd >= 0 && ::close(fd) != 0)
      return fail("cannot close it");
    return Status::ok();
  }
  if (externalWriter_) {
    // What the other program wrote reaches the disk before the rename.
    fd_ = ::open(tempPath().c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd_ < 0)
      return fail("cannot open its temporary '" + tempPath() + "'");
  }
  if (fd_ < 0) {
    errno = 0;
    return fail("it is closed");
  }
  if (::fsync(fd_) != 0)
    return fail("cannot fsync its temporary '" + tempPath() + "'");
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0)
    return fail("cannot close its temporary '" + tempPath() + "'");
  // The destination may have changed since open() (a long training run):
  // a directory or a link that appeared meanwhile is not replaced either.
  Expected<OutputKind> now = checkOutputDestination(path_);
  if (!now.isOk() || *now != OutputKind::File) {
    errno = 0;
    return fail(now.isOk() ? "it became a device or a FIFO while it was "
                             "being written"
                           : now.status().message());
  }
  if (::rename(tempPath().c_str(), path_.c_str()) != 0)
    return fail("cannot rename its temporary '" + tempPath() + "' over it");
  temp_.release();
  // The rename is durable only once the directory entry is on disk. It has
  // happened: a failure here is not the file's, so it is not reported.
  std::string dir = parentDirectory(path_);
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

} // namespace bitpipe::base
