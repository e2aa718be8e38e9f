//===- SafetensorsTarget.cpp - Fuzz target: the safetensors reader --------===//
//
// The input is a safetensors file. The reader opens it from an anonymous
// in-memory file (memfd, named by its /proc/self/fd path, so that nothing
// is written to disk) and every tensor it lists is read, as the checkpoint
// loader reads them. A refused file is fine. The reader promises to check
// every offset against the file before use (Safetensors.h), so a tensor it
// lists must fit in the file: one that does not is a finding even when the
// read that follows would not crash.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "train/Safetensors.h"

#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

using namespace bitpipe::runtime;

// The input as a file, or -1 when the system refuses one (not a finding).
static int memoryFile(const uint8_t *data, size_t size) {
  int fd = memfd_create("fuzz-input.safetensors", MFD_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t done = 0;
  while (done < size) {
    ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) {
      close(fd);
      return -1;
    }
    done += static_cast<size_t>(n);
  }
  return fd;
}

// Elements of `shape`, or -1 when a dimension is negative or the product
// overflows 64 bits (a zero dimension anywhere makes it 0).
static int64_t elements(const std::vector<int64_t> &shape) {
  uint64_t n = 1;
  bool overflow = false, zero = false;
  for (int64_t d : shape) {
    if (d < 0)
      return -1;
    zero |= d == 0;
    overflow |= __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n);
  }
  if (zero)
    return 0;
  return overflow || n > static_cast<uint64_t>(INT64_MAX)
             ? -1
             : static_cast<int64_t>(n);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memoryFile(data, size);
  if (fd < 0)
    return 0;
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  auto reader = SafetensorsReader::open(path);
  if (reader.isOk()) {
    // The reader accepted the file, so it has an 8-byte header length and
    // that many header bytes; the rest is data.
    uint64_t headerLen = 0;
    for (int i = 0; i < 8; ++i)
      headerLen |= static_cast<uint64_t>(data[i]) << (8 * i);
    uint64_t dataSize = size - 8 - headerLen;
    for (const SafetensorsEntry &entry : (*reader)->tensors()) {
      if (entry.begin > entry.end || entry.end > dataSize)
        bitpipe::fuzz::reportFuzzFinding(
            "the reader listed a tensor whose data offsets lie outside "
            "the file");
      // Unknown dtypes are listed as they are (Safetensors.h); only known
      // ones promise that shape and offsets agree.
      size_t width = safetensorsDTypeSize(entry.dtype);
      if (width == 0)
        continue;
      int64_t n = elements(entry.shape);
      uint64_t bytes = 0;
      if (n < 0 ||
          __builtin_mul_overflow(static_cast<uint64_t>(n), width, &bytes) ||
          bytes != entry.end - entry.begin)
        bitpipe::fuzz::reportFuzzFinding(
            "the reader listed a tensor whose shape and dtype disagree with "
            "its data offsets");
      if (entry.dtype != "F32")
        continue;
      std::vector<float> values(static_cast<size_t>(n));
      (void)(*reader)->readF32(entry.name, entry.shape, values.data());
    }
    (void)(*reader)->metadataValue("format");
  }
  close(fd);
  return 0;
}
