//===- bench-safetensors-header.cpp - Header parsing cost vs its size -----===//
//
// Opens a safetensors file of n one-float tensors and looks each of them up
// by name, as a checkpoint load does, for n and 10n entries, and prints the
// ratio of the two times. Linear parsing gives about 10x (up to ~30x when the
// small header fits in the caches and the large one does not); a quadratic
// step (the duplicate-name check once scanned the members parsed so far)
// gave 116x. The two sizes alternate and each keeps its fastest of
// --trials runs, so both see the same load. Results: bench/RESULTS.md.
//
//===----------------------------------------------------------------------===//

#include "TempDir.h" // oneFloatTensorsFile, shared with the unit test
#include "train/Safetensors.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

using namespace bitpipe::runtime;

namespace {

bool writeFile(const std::string &path, const std::string &bytes) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return false;
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

/// Seconds to open \p path and find its \p n tensors; exits on failure.
double openSeconds(const std::string &path, int n) {
  auto start = std::chrono::steady_clock::now();
  auto r = SafetensorsReader::open(path);
  if (!r.isOk()) {
    std::fprintf(stderr, "bench-safetensors-header: %s\n",
                 r.status().message().c_str());
    std::exit(1);
  }
  for (int i = 0; i < n; ++i)
    if (!(*r)->find("t" + std::to_string(i))) {
      std::fprintf(stderr, "bench-safetensors-header: %s: t%d missing\n",
                   path.c_str(), i);
      std::exit(1);
    }
  auto end = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(end - start).count();
}

int usage() {
  std::fprintf(stderr, "usage: bench-safetensors-header [--entries N] "
                       "[--trials K]\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  int n = 20000, trials = 5;
  for (int i = 1; i < argc; ++i) {
    bool last = i + 1 >= argc;
    if (!std::strcmp(argv[i], "--entries") && !last)
      n = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--trials") && !last)
      trials = std::atoi(argv[++i]);
    else
      return usage();
  }
  if (n <= 0 || n > 10000000 || trials <= 0) {
    std::fprintf(stderr, "bench-safetensors-header: --entries must be in "
                         "[1, 10000000] and --trials positive\n");
    return 2;
  }
  char dir[] = "/tmp/bench-safetensors-XXXXXX";
  if (!mkdtemp(dir)) {
    std::perror("bench-safetensors-header: mkdtemp");
    return 1;
  }
  std::string small = std::string(dir) + "/small.safetensors";
  std::string large = std::string(dir) + "/large.safetensors";
  bool written = writeFile(small, testing::oneFloatTensorsFile(n)) &&
                 writeFile(large, testing::oneFloatTensorsFile(10 * n));
  double tSmall = 1e30, tLarge = 1e30;
  for (int t = 0; written && t < trials; ++t) {
    tSmall = std::min(tSmall, openSeconds(small, n));
    tLarge = std::min(tLarge, openSeconds(large, 10 * n));
  }
  std::remove(small.c_str());
  std::remove(large.c_str());
  rmdir(dir);
  if (!written) {
    std::fprintf(stderr, "bench-safetensors-header: cannot write in %s\n", dir);
    return 1;
  }
  std::printf("entries  seconds (best of %d)\n", trials);
  std::printf("%7d  %.4f\n%7d  %.4f\n", n, tSmall, 10 * n, tLarge);
  std::printf("ratio 10x entries: %.1fx (linear ~10x, up to ~30x from "
              "caches; quadratic was 116x)\n",
              tLarge / tSmall);
  return 0;
}
