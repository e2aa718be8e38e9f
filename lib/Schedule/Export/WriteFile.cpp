//===- WriteFile.cpp - Atomic file replacement ----------------------------===//
//
// Write to a sibling temporary, flush it to disk, then rename: rename within
// one directory is atomic on POSIX, so readers see the old file or the new
// one, never a torn one.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Export.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace bitpipe::sched {

Result<std::size_t> writeFileAtomic(const std::string &path,
                                    const std::string &contents) {
  Result<std::size_t> result;
  std::string tmp = path + ".tmp";
  auto fail = [&](const std::string &what) {
    result.error = what + " " + tmp + ": " + std::strerror(errno);
    std::remove(tmp.c_str());
    return result;
  };
  std::FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    result.error = "cannot create " + tmp + ": " + std::strerror(errno);
    return result;
  }
  bool ok =
      std::fwrite(contents.data(), 1, contents.size(), f) == contents.size() &&
      std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  if (std::fclose(f) != 0 || !ok)
    return fail("cannot write");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    std::remove(tmp.c_str());
    result.error =
        "cannot rename " + tmp + " to " + path + ": " + std::strerror(saved);
    return result;
  }
  result.value = contents.size();
  return result;
}

} // namespace bitpipe::sched
