//===- Safetensors.cpp - Read and write safetensors files -------*- C++ -*-===//

#include "Safetensors.h"

#include "bitpipe/base/AtomicFile.h"
#include "core/Json.h"
#include "core/Tensor.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_set>

namespace bitpipe::runtime {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian; the writer copies raw "
              "floats");

// The reference implementation refuses headers above 100 MB; so do we,
// before allocating for one.
static constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

size_t safetensorsDTypeSize(const std::string &d) {
  if (d == "F64" || d == "I64" || d == "U64")
    return 8;
  if (d == "F32" || d == "I32" || d == "U32")
    return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16")
    return 2;
  if (d == "I8" || d == "U8" || d == "BOOL" || d == "F8_E4M3" ||
      d == "F8_E5M2")
    return 1;
  return 0;
}

Status writeSafetensors(const std::string &path,
                        const std::vector<SafetensorsTensor> &tensors,
                        const std::map<std::string, std::string> &metadata) {
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto &kv : metadata) {
      header += (first ? "" : ",") + jsonQuote(kv.first) + ":" +
                jsonQuote(kv.second);
      first = false;
    }
    header += "}";
  }
  uint64_t offset = 0;
  std::unordered_set<std::string> names;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const SafetensorsTensor &t = tensors[i];
    if (t.name.empty() || t.name == "__metadata__")
      return Status::error(ErrorCode::InvalidArgument,
                           "safetensors '" + path + "': invalid tensor name '" +
                               t.name + "'");
    if (!names.insert(t.name).second)
      return Status::error(ErrorCode::InvalidArgument,
                           "safetensors '" + path + "': tensor '" + t.name +
                               "' is listed twice");
    int64_t n = numElements(t.shape);
    if (n < 0 || (n > 0 && !t.data))
      return Status::error(ErrorCode::InvalidArgument,
                           "safetensors '" + path + "': tensor '" + t.name +
                               "' has shape " + shapeToString(t.shape) +
                               " and no data");
    uint64_t bytes = static_cast<uint64_t>(n) * sizeof(float);
    std::string shape;
    for (size_t d = 0; d < t.shape.size(); ++d)
      shape += (d ? "," : "") + std::to_string(t.shape[d]);
    if (header.size() > 1)
      header += ",";
    header += jsonQuote(t.name) + ":{\"dtype\":\"F32\",\"shape\":[" + shape +
              "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  header += "}";
  // Trailing spaces are valid JSON whitespace; they align the data to 8.
  header.append((8 - (header.size() % 8)) % 8, ' ');

  Expected<base::AtomicFileWriter> w = base::AtomicFileWriter::open(path);
  if (!w.isOk())
    return w.status();
  unsigned char len[8];
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    len[i] = static_cast<unsigned char>(n >> (8 * i));
  Status s = w->write(len, 8);
  if (s.isOk())
    s = w->write(header.data(), header.size());
  for (const SafetensorsTensor &t : tensors) {
    if (!s.isOk())
      break;
    s = w->write(t.data, static_cast<size_t>(numElements(t.shape)) *
                             sizeof(float));
  }
  if (!s.isOk())
    return s;
  return w->commit();
}

static Status formatError(const std::string &path, const std::string &what) {
  return Status::error(ErrorCode::FormatError,
                       "safetensors file '" + path + "': " + what);
}

static bool preadAll(int fd, void *buf, size_t bytes, uint64_t offset) {
  char *p = static_cast<char *>(buf);
  while (bytes > 0) {
    ssize_t n = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    bytes -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

Expected<std::unique_ptr<SafetensorsReader>>
SafetensorsReader::open(const std::string &path) {
  std::unique_ptr<SafetensorsReader> r(new SafetensorsReader());
  r->path_ = path;
  r->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (r->fd_ < 0)
    return Status::error(errno == ENOENT ? ErrorCode::NotFound
                                         : ErrorCode::IoError,
                         "cannot open safetensors file '" + path +
                             "': " + std::strerror(errno));
  struct stat st;
  if (::fstat(r->fd_, &st) != 0)
    return Status::error(ErrorCode::IoError, "cannot stat '" + path +
                                                 "': " + std::strerror(errno));
  uint64_t fileSize = static_cast<uint64_t>(st.st_size);
  unsigned char len[8];
  if (fileSize < 8 || !preadAll(r->fd_, len, 8, 0))
    return formatError(path, formatString("truncated: %llu bytes, fewer than "
                                          "the 8-byte header length",
                                          static_cast<unsigned long long>(
                                              fileSize)));
  uint64_t headerLen = 0;
  for (int i = 0; i < 8; ++i)
    headerLen |= static_cast<uint64_t>(len[i]) << (8 * i);
  if (headerLen > kMaxHeaderBytes)
    return formatError(path, formatString("header length %llu is larger than "
                                          "the %llu-byte limit (not a "
                                          "safetensors file?)",
                                          static_cast<unsigned long long>(
                                              headerLen),
                                          static_cast<unsigned long long>(
                                              kMaxHeaderBytes)));
  if (8 + headerLen > fileSize)
    return formatError(
        path, formatString("truncated: the header needs %llu bytes but the "
                           "file has %llu after the length",
                           static_cast<unsigned long long>(headerLen),
                           static_cast<unsigned long long>(fileSize - 8)));
  std::string header(headerLen, '\0');
  if (!preadAll(r->fd_, header.data(), headerLen, 8))
    return Status::error(ErrorCode::IoError, "cannot read the header of '" +
                                                 path + "'");
  Expected<JsonValue> json = parseJson(header);
  if (!json.isOk())
    return formatError(path, "bad header: " + json.status().message());
  if (json->kind != JsonValue::Kind::Object)
    return formatError(path, "the header is not a JSON object");

  r->dataStart_ = 8 + headerLen;
  uint64_t dataSize = fileSize - r->dataStart_;
  for (const auto &member : json->object) {
    const std::string &name = member.first;
    const JsonValue &v = member.second;
    if (name == "__metadata__") {
      if (v.kind != JsonValue::Kind::Object)
        return formatError(path, "__metadata__ is not an object");
      // The format says string -> string; tolerate other values (another
      // tool's extension) by skipping them.
      for (const auto &kv : v.object)
        if (kv.second.kind == JsonValue::Kind::String)
          r->metadata_[kv.first] = kv.second.string;
      continue;
    }
    auto bad = [&](const std::string &what) {
      return formatError(path, "tensor '" + name + "': " + what);
    };
    if (v.kind != JsonValue::Kind::Object)
      return bad("its header entry is not an object");
    const JsonValue *dtype = v.get("dtype");
    const JsonValue *shape = v.get("shape");
    const JsonValue *offsets = v.get("data_offsets");
    if (!dtype || dtype->kind != JsonValue::Kind::String)
      return bad("missing or non-string \"dtype\"");
    if (!shape || shape->kind != JsonValue::Kind::Array)
      return bad("missing or non-array \"shape\"");
    if (!offsets || offsets->kind != JsonValue::Kind::Array ||
        offsets->array.size() != 2)
      return bad("\"data_offsets\" is not a [begin, end] pair");
    SafetensorsEntry e;
    e.name = name;
    e.dtype = dtype->string;
    for (const JsonValue &d : shape->array) {
      if (!d.isInteger || d.integer < 0)
        return bad("a shape dimension is not a non-negative integer");
      e.shape.push_back(d.integer);
    }
    for (const JsonValue &o : offsets->array)
      if (!o.isInteger || o.integer < 0)
        return bad("a data offset is not a non-negative integer");
    e.begin = static_cast<uint64_t>(offsets->array[0].integer);
    e.end = static_cast<uint64_t>(offsets->array[1].integer);
    if (e.begin > e.end)
      return bad("data_offsets begin after they end");
    if (e.end > dataSize)
      return formatError(
          path, formatString("truncated: tensor '%s' ends at byte %llu of "
                             "the data, but the file holds only %llu data "
                             "bytes",
                             name.c_str(),
                             static_cast<unsigned long long>(e.end),
                             static_cast<unsigned long long>(dataSize)));
    int64_t n = numElements(e.shape);
    size_t width = safetensorsDTypeSize(e.dtype);
    if (n < 0)
      return bad("shape " + shapeToString(e.shape) + " overflows");
    if (width != 0 && static_cast<uint64_t>(n) * width != e.end - e.begin)
      return bad(formatString("shape %s of %s needs %llu bytes, data_offsets "
                              "span %llu",
                              shapeToString(e.shape).c_str(), e.dtype.c_str(),
                              static_cast<unsigned long long>(n) * width,
                              static_cast<unsigned long long>(e.end -
                                                              e.begin)));
    r->index_.emplace(e.name, r->entries_.size());
    r->entries_.push_back(std::move(e));
  }
  // Two tensors must not share bytes (the reference reader checks this too).
  std::vector<const SafetensorsEntry *> byOffset;
  for (const SafetensorsEntry &e : r->entries_)
    byOffset.push_back(&e);
  std::sort(byOffset.begin(), byOffset.end(),
            [](const SafetensorsEntry *a, const SafetensorsEntry *b) {
              return a->begin < b->begin;
            });
  for (size_t i = 1; i < byOffset.size(); ++i)
    if (byOffset[i]->begin < byOffset[i - 1]->end)
      return formatError(path, "tensors '" + byOffset[i - 1]->name +
                                   "' and '" + byOffset[i]->name +
                                   "' overlap");
  return std::move(r);
}

SafetensorsReader::~SafetensorsReader() {
  if (fd_ >= 0)
    ::close(fd_);
}

const std::string *
SafetensorsReader::metadataValue(const std::string &key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

const SafetensorsEntry *
SafetensorsReader::find(const std::string &name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

/// The F32 value of IEEE binary16 \p h (normal, subnormal, zero, inf,
/// NaN): exact, since F32 has more exponent and mantissa bits.
static float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) { // inf, NaN
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) { // normal: rebias 15 -> 127
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) { // zero
    bits = sign;
  } else { // subnormal: mantissa * 2^-24, normal in F32
    int shift = 0;
    while (!(mantissa & 0x400u)) {
      mantissa <<= 1;
      ++shift;
    }
    bits = sign | ((113u - shift) << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

Status SafetensorsReader::readAsF32(const std::string &name,
                                    const std::vector<int64_t> &shape,
                                    float *out) const {
  const SafetensorsEntry *e = find(name);
  if (!e || e->dtype == "F32")
    return readF32(name, shape, out);
  if (e->dtype != "BF16" && e->dtype != "F16")
    return formatError(path_, "tensor '" + name + "' is " + e->dtype +
                                  ", expected F32, BF16 or F16");
  if (e->shape != shape)
    return formatError(path_, "tensor '" + name + "' has shape " +
                                  shapeToString(e->shape) + ", expected " +
                                  shapeToString(shape));
  std::vector<uint16_t> half((e->end - e->begin) / 2);
  if (!preadAll(fd_, half.data(), e->end - e->begin, dataStart_ + e->begin))
    return Status::error(ErrorCode::IoError, "cannot read tensor '" + name +
                                                 "' from '" + path_ + "'");
  bool bf16 = e->dtype == "BF16";
  for (size_t i = 0; i < half.size(); ++i) {
    if (bf16) {
      uint32_t bits = static_cast<uint32_t>(half[i]) << 16;
      std::memcpy(&out[i], &bits, sizeof(float));
    } else {
      out[i] = halfToFloat(half[i]);
    }
  }
  return Status::ok();
}

Status SafetensorsReader::readF32(const std::string &name,
                                  const std::vector<int64_t> &shape,
                                  float *out) const {
  const SafetensorsEntry *e = find(name);
  if (!e)
    return Status::error(ErrorCode::NotFound, "safetensors file '" + path_ +
                                                  "' has no tensor '" + name +
                                                  "'");
  if (e->dtype != "F32")
    return formatError(path_, "tensor '" + name + "' is " + e->dtype +
                                  ", expected F32");
  if (e->shape != shape)
    return formatError(path_, "tensor '" + name + "' has shape " +
                                  shapeToString(e->shape) + ", expected " +
                                  shapeToString(shape));
  if (!preadAll(fd_, out, e->end - e->begin, dataStart_ + e->begin))
    return Status::error(ErrorCode::IoError, "cannot read tensor '" + name +
                                                 "' from '" + path_ + "'");
  return Status::ok();
}

} // namespace bitpipe::runtime
