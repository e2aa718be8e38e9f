//===- bitpipe-tokenize.cpp - Text files to a flat token file -------------===//
//
//   bitpipe-tokenize [--dtype u16|u32] -o TOKENS.bin FILE...
//
// Byte-level tokenisation: every byte of the input files becomes one token
// (ids 0..255, so a model with vocab >= 256 can train on it), written in the
// flat little-endian format that nanoGPT's and Megatron's tools write and
// TokenDataset reads. Files are concatenated in the order given. The output
// is written as every tool writes (bitpipe/base/AtomicFile.h,
// docs/files.md): to a temporary renamed over TOKENS.bin once complete, so a
// failed run (a full disk, a signal) leaves the previous file as it was; a
// directory or a symbolic link is refused before the inputs are read.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/base/AtomicFile.h"
#include "core/Flags.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace bitpipe::runtime;

namespace {

int usage(const FlagSet &flags) {
  std::fprintf(stderr,
               "usage: bitpipe-tokenize [--dtype u16|u32] -o TOKENS.bin "
               "FILE...\n"
               "Writes every byte of the files as one token (byte-level).\n"
               "\nflags:\n%s",
               flags.help().c_str());
  return 2;
}

bool readFile(const std::string &path, std::vector<unsigned char> &out) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    std::fprintf(stderr, "bitpipe-tokenize: %s: %s\n", path.c_str(),
                 std::strerror(errno));
    return false;
  }
  unsigned char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0)
    out.insert(out.end(), buffer, buffer + n);
  bool ok = !std::ferror(f);
  std::fclose(f);
  if (!ok)
    std::fprintf(stderr, "bitpipe-tokenize: %s: read error\n", path.c_str());
  return ok;
}

template <typename T>
std::vector<unsigned char> encode(const std::vector<unsigned char> &bytes) {
  // Little-endian on every host: byte by byte, not a memcpy of T.
  std::vector<unsigned char> out(bytes.size() * sizeof(T), 0);
  for (size_t i = 0; i < bytes.size(); ++i)
    out[i * sizeof(T)] = bytes[i];
  return out;
}

} // namespace

int main(int argc, char **argv) {
  std::string output, dtype = "u16";
  bool help = false;
  std::vector<std::string> inputs;
  FlagSet flags;
  flags.text("-o", "TOKENS.bin", "the token file to write (required)", &output)
      .text("--dtype", "u16|u32", "token type (default u16)", &dtype)
      .toggle("--help", "this text", &help)
      .toggle("-h", "the same", &help);
  Status parsed = flags.parse(argc, argv, &inputs);
  if (!parsed.isOk()) {
    std::fprintf(stderr, "bitpipe-tokenize: %s\n", parsed.message().c_str());
    return usage(flags);
  }
  if (help || output.empty() || inputs.empty())
    return usage(flags);
  if (dtype != "u16" && dtype != "u32") {
    std::fprintf(stderr,
                 "bitpipe-tokenize: --dtype must be u16 or u32, got '%s'\n",
                 dtype.c_str());
    return 2;
  }
  Expected<bitpipe::base::OutputKind> destination =
      bitpipe::base::checkOutputDestination(output);
  if (!destination.isOk()) {
    std::fprintf(stderr, "bitpipe-tokenize: -o: %s\n",
                 destination.status().message().c_str());
    return 1;
  }

  std::vector<unsigned char> bytes;
  for (const std::string &path : inputs)
    if (!readFile(path, bytes))
      return 1;
  if (bytes.empty()) {
    std::fprintf(stderr, "bitpipe-tokenize: the input files are empty\n");
    return 1;
  }
  std::vector<unsigned char> data =
      dtype == "u16" ? encode<uint16_t>(bytes) : encode<uint32_t>(bytes);
  Status status =
      bitpipe::base::writeFileAtomically(output, data.data(), data.size());
  if (!status.isOk()) {
    std::fprintf(stderr, "bitpipe-tokenize: -o: %s\n",
                 status.message().c_str());
    return 1;
  }
  std::printf("bitpipe-tokenize: %zu tokens (%s) from %zu file(s) -> %s\n",
              bytes.size(), dtype.c_str(), inputs.size(), output.c_str());
  return 0;
}
