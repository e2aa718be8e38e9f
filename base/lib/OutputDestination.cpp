//===- OutputDestination.cpp - What an output path may be -------*- C++ -*-===//

#include "bitpipe/base/OutputDestination.h"

#include <cstdlib>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace bitpipe::base {

namespace {

Status refuse(const std::string &path, const std::string &why) {
  return Status::error(ErrorCode::InvalidArgument, "'" + path + "' " + why);
}

bool isStream(mode_t mode) { return S_ISCHR(mode) || S_ISFIFO(mode); }

/// What a non-regular, non-stream file is, for the message.
std::string describe(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

/// The temporary and the rename need the directory to exist and accept new
/// entries. access() alone cannot say so: as root it grants writing
/// anywhere but on a read-only file system, /proc included, where the
/// first save would then fail hours into a run. So the temporary the
/// writer will use, "<path>.tmp.<pid>", is created and removed now.
Status checkParent(const std::string &path) {
  std::string dir = parentDirectory(path);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    return refuse(path, "cannot be created: directory '" + dir + "' " +
                            (errno == ENOENT ? std::string("does not exist")
                                             : std::strerror(errno)));
  if (!S_ISDIR(st.st_mode))
    return refuse(path, "cannot be created: '" + dir + "' is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return refuse(path, "cannot be written: directory '" + dir +
                            "' is not writable (" + std::strerror(errno) + ")");
  std::string probe = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    // Our own temporary already there: only this process could have made
    // it, and it writes no other file of that name.
    if (errno == EEXIST)
      return Status::ok();
    return refuse(path, "cannot be written: creating a file in directory '" +
                            dir + "' fails (" + std::strerror(errno) + ")");
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::ok();
}

} // namespace

std::string parentDirectory(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

int descriptorNamedBy(const std::string &path) {
  if (path == "-" || path == "/dev/stdout")
    return STDOUT_FILENO;
  if (path == "/dev/stderr")
    return STDERR_FILENO;
  for (const char *dir : {"/dev/fd/", "/proc/self/fd/"}) {
    size_t n = std::strlen(dir);
    if (path.compare(0, n, dir) != 0 || path.size() == n ||
        path.size() > n + 6 ||
        path.find_first_not_of("0123456789", n) != std::string::npos)
      continue;
    return std::atoi(path.c_str() + n);
  }
  return -1;
}

Expected<int> openOutputStream(const std::string &path) {
  int named = descriptorNamedBy(path);
  if (named >= 0) {
    int fd = ::fcntl(named, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
      return Status::error(ErrorCode::IoError,
                           "cannot write '" + path + "': descriptor " +
                               std::to_string(named) + " is not open (" +
                               std::strerror(errno) + ")");
    return fd;
  }
  // No O_CREAT, no O_TRUNC: a stream is written into, never created.
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::error(ErrorCode::IoError,
                         "cannot open '" + path + "': " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !isStream(st.st_mode)) {
    ::close(fd);
    return Status::error(ErrorCode::IoError,
                         "'" + path +
                             "' changed while it was opened (it was "
                             "a device or a FIFO); nothing was written");
  }
  return fd;
}

Expected<OutputKind> checkOutputDestination(const std::string &path) {
  int named = descriptorNamedBy(path);
  if (named >= 0) {
    if (::fcntl(named, F_GETFD) < 0)
      return refuse(path, "names descriptor " + std::to_string(named) +
                              ", which is not open");
    return OutputKind::Stream;
  }
  if (path.empty())
    return Status::error(ErrorCode::InvalidArgument,
                         "an empty path names no file");
  if (path.back() == '/')
    return refuse(path, "ends with '/': it names a directory, not a file");

  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT)
      return refuse(path, std::string("cannot be inspected: ") +
                              std::strerror(errno));
    BP_TRY(checkParent(path));
    return OutputKind::File;
  }
  if (S_ISREG(st.st_mode)) {
    BP_TRY(checkParent(path));
    return OutputKind::File;
  }
  if (isStream(st.st_mode))
    return OutputKind::Stream;
  if (S_ISLNK(st.st_mode)) {
    struct stat target;
    bool resolves = ::stat(path.c_str(), &target) == 0;
    // /dev/stdout, /dev/fd/N: a name for a stream, written into.
    if (resolves && isStream(target.st_mode))
      return OutputKind::Stream;
    char to[PATH_MAX];
    ssize_t n = ::readlink(path.c_str(), to, sizeof to - 1);
    std::string linkText =
        n >= 0 ? std::string(to, static_cast<size_t>(n)) : std::string("?");
    std::string what = !resolves
                           ? "a dangling symbolic link (to '" + linkText + "')"
                       : S_ISREG(target.st_mode)
                           ? "a symbolic link (to '" + linkText + "')"
                           : "a symbolic link to " + describe(target.st_mode) +
                                 " ('" + linkText + "')";
    return refuse(path, "is " + what +
                            "; refusing to replace the link with a file: "
                            "name the file itself");
  }
  return refuse(path, "is " + describe(st.st_mode) +
                          "; refusing to replace it with a file: expected a "
                          "regular file or a new name");
}

} // namespace bitpipe::base
