//===- Safetensors.h - Read and write safetensors files ---------*- C++ -*-===//
//
// The format (Hugging Face safetensors): an 8-byte little-endian unsigned
// header length N; N bytes of a UTF-8 JSON object mapping each tensor name to
// {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]} (byte
// offsets into the data that follows the header), plus an optional
// "__metadata__" object of string -> string; then the data, row-major,
// little-endian.
//
// The writer puts tensors in the order given, pads the header with spaces so
// the data starts 8-byte aligned (as the reference writer does), and writes
// atomically (bitpipe/base/AtomicFile.h). The reader accepts what other
// tools write: any member order, any extra metadata, any dtype in the header
// (only F32 tensors can be read into floats); it checks every offset against
// the file before use, so a truncated or corrupt file is a message, not a
// crash.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_TRAIN_SAFETENSORS_H
#define BITPIPE_RUNTIME_TRAIN_SAFETENSORS_H

#include "core/Status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace bitpipe::runtime {

/// A tensor to write: \p data holds numElements(shape) floats.
struct SafetensorsTensor {
  std::string name;
  const float *data = nullptr;
  std::vector<int64_t> shape;
};

Status writeSafetensors(const std::string &path,
                        const std::vector<SafetensorsTensor> &tensors,
                        const std::map<std::string, std::string> &metadata);

struct SafetensorsEntry {
  std::string name;
  std::string dtype; // as in the file: "F32", "BF16", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0; // byte offsets relative to the start of the data
  uint64_t end = 0;
};

class SafetensorsReader {
public:
  /// Reads and validates the header of \p path (not the data).
  static Expected<std::unique_ptr<SafetensorsReader>>
  open(const std::string &path);
  ~SafetensorsReader();
  SafetensorsReader(const SafetensorsReader &) = delete;
  SafetensorsReader &operator=(const SafetensorsReader &) = delete;

  const std::string &path() const { return path_; }
  const std::vector<SafetensorsEntry> &tensors() const { return entries_; }
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }
  /// The metadata value of \p key, or null.
  const std::string *metadataValue(const std::string &key) const;
  const SafetensorsEntry *find(const std::string &name) const;

  /// Reads tensor \p name into \p out, which holds numElements(shape)
  /// floats. Fails, naming the file and tensor, when it is missing, is not
  /// F32, or has another shape.
  Status readF32(const std::string &name, const std::vector<int64_t> &shape,
                 float *out) const;
  /// As readF32, but also reads BF16 and F16 tensors, converted to F32
  /// exactly (every BF16 and F16 value is an F32 value), as Hugging Face
  /// checkpoints are often stored (docs/huggingface.md).
  Status readAsF32(const std::string &name, const std::vector<int64_t> &shape,
                   float *out) const;

private:
  SafetensorsReader() = default;

  std::string path_;
  int fd_ = -1;
  uint64_t dataStart_ = 0;
  std::vector<SafetensorsEntry> entries_;
  // Name -> index into entries_: a checkpoint looks up every tensor by name,
  // which must not cost a scan each (linear load, docs/runtime-abi.md).
  std::unordered_map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

/// Bytes per element of a safetensors dtype name, 0 if unknown.
size_t safetensorsDTypeSize(const std::string &dtype);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_TRAIN_SAFETENSORS_H
