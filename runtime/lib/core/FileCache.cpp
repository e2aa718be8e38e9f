//===- FileCache.cpp - A folder of keyed entries that processes share -----===//
//
// See FileCache.h. An entry is one line of header, then the bytes:
//   "bitpipe-cache 1 bytes=<n> crc32c=<8 hex digits>\n<n bytes>"
//
//===----------------------------------------------------------------------===//

#include "FileCache.h"

#include "Crc32c.h"
#include "bitpipe/base/AtomicFile.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <sys/stat.h>

namespace bitpipe::runtime {

namespace {

constexpr const char *kMagic = "bitpipe-cache 1";
constexpr size_t kMaxKeyLength = 200;

std::string header(std::string_view bytes) {
  return std::string(kMagic) + " bytes=" + std::to_string(bytes.size()) +
         " crc32c=" + crc32cHex(crc32c(bytes.data(), bytes.size())) + "\n";
}

/// mkdir -p \p dir (mode 0755 for what it creates).
Status makeDirs(const std::string &dir) {
  if (dir.empty())
    return Status::error(ErrorCode::InvalidArgument, "no cache folder");
  std::string prefix;
  size_t at = 0;
  while (at != std::string::npos) {
    at = dir.find('/', at + 1);
    prefix = dir.substr(0, at);
    if (prefix.empty())
      continue;
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return Status::error(ErrorCode::IoError,
                           "cannot create the cache folder '" + prefix +
                               "': " + std::strerror(errno));
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status::error(ErrorCode::IoError,
                         "the cache folder '" + dir + "' is not a folder");
  return Status::ok();
}

} // namespace

std::string FileCache::defaultDir() {
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/')
    return std::string(xdg) + "/bitpipe";
  if (const char *home = std::getenv("HOME"); home && *home == '/')
    return std::string(home) + "/.cache/bitpipe";
  return "";
}

bool FileCache::validKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxKeyLength || key[0] == '.')
    return false;
  for (char c : key)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
          c == '+' || c == '-'))
      return false;
  return true;
}

std::string FileCache::pathOf(std::string_view key) const {
  return dir_ + "/" + std::string(key);
}

FileCache::Lookup FileCache::load(std::string_view key) const {
  Lookup out;
  if (dir_.empty() || !validKey(key))
    return out;
  const std::string path = pathOf(key);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT)
      out.problem = "cannot read '" + path + "': " + std::strerror(errno);
    return out;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    out.problem = "cannot read '" + path + "'";
    return out;
  }
  std::ostringstream whole;
  whole << in.rdbuf();
  if (in.bad()) {
    out.problem = "cannot read '" + path + "'";
    return out;
  }
  const std::string text = whole.str();
  const size_t eol = text.find('\n');
  const std::string_view head(text.data(), eol == std::string::npos ? 0 : eol);
  unsigned long long bytes = 0;
  char crc[9] = {};
  if (eol == std::string::npos ||
      head.substr(0, std::strlen(kMagic)) != kMagic ||
      std::sscanf(std::string(head).c_str() + std::strlen(kMagic),
                  " bytes=%llu crc32c=%8[0-9a-f]", &bytes, crc) != 2) {
    out.problem = "'" + path + "' is not a bitpipe cache entry";
    return out;
  }
  std::string_view body(text.data() + eol + 1, text.size() - eol - 1);
  if (body.size() != bytes) {
    out.problem = "'" + path +
                  "' is truncated: " + std::to_string(body.size()) + " of " +
                  std::to_string(bytes) + " bytes";
    return out;
  }
  if (crc32cHex(crc32c(body.data(), body.size())) != crc) {
    out.problem = "'" + path + "' is corrupt (its CRC-32C does not match)";
    return out;
  }
  out.bytes = std::string(body);
  return out;
}

Status FileCache::store(std::string_view key, std::string_view bytes) const {
  if (!validKey(key))
    return Status::error(ErrorCode::InvalidArgument,
                         "'" + std::string(key) +
                             "' cannot name a cache entry");
  BP_TRY(makeDirs(dir_));
  BP_ASSIGN(writer, base::AtomicFileWriter::open(pathOf(key)));
  const std::string head = header(bytes);
  BP_TRY(writer.write(head.data(), head.size()));
  BP_TRY(writer.write(bytes.data(), bytes.size()));
  return writer.commit();
}

} // namespace bitpipe::runtime
