//===- TempDir.h - A fresh directory per test -------------------*- C++ -*-===//

#ifndef BITPIPE_RUNTIME_UNITTESTS_TRAIN_TEMPDIR_H
#define BITPIPE_RUNTIME_UNITTESTS_TRAIN_TEMPDIR_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace bitpipe::runtime::testing {

/// mkdtemp under TMPDIR; removed (one level deep) at destruction.
class TempDir {
public:
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/bitpipe-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()))
      path_ = buf.data();
  }
  ~TempDir() {
    for (const std::string &f : list())
      std::remove((path_ + "/" + f).c_str());
    ::rmdir(path_.c_str());
  }
  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const {
    return path_ + "/" + name;
  }
  std::vector<std::string> list() const {
    std::vector<std::string> out;
    if (DIR *d = ::opendir(path_.c_str())) {
      while (dirent *e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != "..")
          out.push_back(n);
      }
      ::closedir(d);
    }
    return out;
  }

private:
  std::string path_;
};

inline void writeBytes(const std::string &path, const void *data,
                       size_t bytes) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (bytes)
    std::fwrite(data, 1, bytes, f);
  std::fclose(f);
}

inline std::string readBytes(const std::string &path) {
  std::string out;
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    out.append(buf, n);
  std::fclose(f);
  return out;
}

/// A safetensors file's bytes: 8-byte little-endian header length, the
/// header, the data (as the format specifies), spelt out byte by byte so
/// that the tests do not depend on the reader's own code.
inline std::string safetensorsBytes(const std::string &header,
                                    const std::string &data) {
  std::string out;
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out += static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

/// The bytes of a safetensors file of \p n one-float tensors t0..t{n-1}:
/// a header as large as a real model's (SafetensorsHeaderTest, and
/// bench/safetensors-header, which measures its parsing).
inline std::string oneFloatTensorsFile(int n) {
  std::string header = "{";
  for (int i = 0; i < n; ++i)
    header += (i ? ",\"t" : "\"t") + std::to_string(i) +
              "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" +
              std::to_string(4 * i) + "," + std::to_string(4 * i + 4) + "]}";
  header += "}";
  return safetensorsBytes(header,
                          std::string(4 * static_cast<size_t>(n), '\0'));
}

} // namespace bitpipe::runtime::testing

#endif // BITPIPE_RUNTIME_UNITTESTS_TRAIN_TEMPDIR_H
