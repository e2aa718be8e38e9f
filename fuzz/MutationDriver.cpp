//===- MutationDriver.cpp - The project's own seeded fuzz driver ----------===//
//
//   bitpipe-fuzz-<target> [--seed N] [--runs N] [--seconds S]
//       [--corpus DIR]... [--dict FILE] [--crash-dir DIR] [--timeout S]
//       [--max-len BYTES] [--memory-mb MB]
//   bitpipe-fuzz-<target> --replay PATH [--replay PATH]... [--crash-dir DIR]
//
// Runs the target (FuzzTarget.h) in-process on every seed of the corpus
// directories, then on seeded mutants of them (Mutator.h) until --runs
// inputs or --seconds have gone by, whichever comes first. --replay runs
// the given files (or every file of the given directories) once each, as
// ctest does with fuzz/regressions/<target>/. A crash, abort or hang saves
// the input and kills the driver (CrashReport.h); a clean end prints what
// ran and exits 0. The same seed and corpus give the same inputs.
//
// It is the libFuzzer build's stand-in where clang is not available: no
// coverage feedback, but the same targets, seeds and dictionaries
// (docs/robustness.md).
//
//===----------------------------------------------------------------------===//

#include "CrashReport.h"
#include "FuzzTarget.h"
#include "Mutator.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <vector>

namespace fs = std::filesystem;

// AddressSanitizer reserves terabytes of address space for its shadow, so
// an address-space limit would break it (the libFuzzer build compiles
// everything with it): there the default is no limit.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BITPIPE_FUZZ_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define BITPIPE_FUZZ_UNDER_ASAN 1
#endif
#ifdef BITPIPE_FUZZ_UNDER_ASAN
static constexpr uint64_t kDefaultMemoryMB = 0;
#else
static constexpr uint64_t kDefaultMemoryMB = 4096;
#endif
using namespace bitpipe::fuzz;

namespace {

struct Options {
  uint64_t seed = 1;
  uint64_t runs = 0;   // 0: no limit (then --seconds must be given)
  double seconds = 0;  // 0: no limit
  std::vector<std::string> corpora;
  std::string dictionary;
  std::string crashDir = ".";
  unsigned timeout = 10;
  size_t maxLength = 1 << 20;
  uint64_t memoryMB = kDefaultMemoryMB; // 0: no limit
  std::vector<std::string> replay;
};

[[noreturn]] void usageError(const std::string &program,
                             const std::string &what) {
  std::fprintf(stderr, "%s: error: %s\n", program.c_str(), what.c_str());
  std::exit(2);
}

// The value of a numeric flag: all digits, at most `max`.
uint64_t number(const std::string &program, const std::string &flag,
                const char *text, uint64_t max) {
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (!*text || *end || errno || text[0] == '-' || v > max)
    usageError(program, flag + ": expected an integer from 0 to " +
                            std::to_string(max) + ", got '" + text + "'");
  return v;
}

Options parseOptions(const std::string &program, int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help") {
      std::printf("usage: %s [--seed N] [--runs N] [--seconds S] "
                  "[--corpus DIR]... [--dict FILE] [--crash-dir DIR] "
                  "[--timeout S] [--max-len BYTES] [--memory-mb MB]\n"
                  "       %s --replay FILE|DIR [--replay FILE|DIR]... "
                  "[--crash-dir DIR] [--timeout S]\n"
                  "(docs/robustness.md)\n",
                  program.c_str(), program.c_str());
      std::exit(0);
    }
    if (i + 1 >= argc)
      usageError(program, flag + " needs a value (see --help)");
    const char *value = argv[++i];
    if (flag == "--seed")
      o.seed = number(program, flag, value, UINT64_MAX);
    else if (flag == "--runs")
      o.runs = number(program, flag, value, UINT64_MAX);
    else if (flag == "--seconds")
      o.seconds = number(program, flag, value, 365ull * 24 * 3600);
    else if (flag == "--replay")
      o.replay.push_back(value);
    else if (flag == "--corpus")
      o.corpora.push_back(value);
    else if (flag == "--dict")
      o.dictionary = value;
    else if (flag == "--crash-dir")
      o.crashDir = value;
    else if (flag == "--timeout")
      o.timeout = number(program, flag, value, 3600);
    else if (flag == "--max-len")
      o.maxLength = number(program, flag, value, 1ull << 30);
    else if (flag == "--memory-mb")
      o.memoryMB = number(program, flag, value, 1ull << 30);
    else
      usageError(program, "unknown flag '" + flag + "' (see --help)");
  }
  bool replay = !o.replay.empty();
  if (!replay && o.corpora.empty())
    usageError(program, "no --corpus directory: the mutants need seeds");
  if (!replay && o.runs == 0 && o.seconds == 0)
    usageError(program, "give --runs N or --seconds S (or both: whichever "
                        "comes first)");
  return o;
}

std::string readFile(const std::string &program, const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in)
    usageError(program, "cannot read '" + path.string() + "'");
  return text.str();
}

// The regular files of `paths` (files as they are, directories' files by
// name), sorted, so that the order and hence the run is reproducible.
std::vector<fs::path> filesOf(const std::string &program,
                              const std::vector<std::string> &paths) {
  std::vector<fs::path> files;
  for (const std::string &p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> inDir;
      for (const fs::directory_entry &e : fs::directory_iterator(p, ec))
        if (e.is_regular_file(ec))
          inDir.push_back(e.path());
      if (ec)
        usageError(program, "cannot list '" + p + "': " + ec.message());
      std::sort(inDir.begin(), inDir.end());
      files.insert(files.end(), inDir.begin(), inDir.end());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      usageError(program, "'" + p + "' is neither a file nor a directory");
    }
  }
  return files;
}

void runOne(const std::string &input, const std::string &label) {
  const uint8_t *data = reinterpret_cast<const uint8_t *>(input.data());
  beginInput(data, input.size(), label.c_str());
  LLVMFuzzerTestOneInput(data, input.size());
  endInput();
}

} // namespace

int main(int argc, char **argv) {
  std::string program = fs::path(argv[0]).filename().string();
  Options o = parseOptions(program, argc, argv);

  // A runaway allocation becomes std::bad_alloc (an abort: a finding)
  // instead of taking the machine's memory.
  if (o.memoryMB) {
    rlimit limit{o.memoryMB << 20, o.memoryMB << 20};
    if (setrlimit(RLIMIT_AS, &limit) != 0)
      std::perror("bitpipe-fuzz: warning: cannot limit the address space");
  }
  std::error_code ec;
  fs::create_directories(o.crashDir, ec);
  if (ec)
    usageError(program, "--crash-dir '" + o.crashDir + "': " + ec.message());
  if (!installCrashReport(o.crashDir.c_str(), program.c_str(), o.timeout))
    usageError(program, std::string("cannot install the crash handlers: ") +
                            std::strerror(errno));

  if (!o.replay.empty()) {
    std::vector<fs::path> files = filesOf(program, o.replay);
    for (const fs::path &f : files)
      runOne(readFile(program, f), f.filename().string());
    std::printf("%s: replayed %zu input(s): no crash, no hang\n",
                program.c_str(), files.size());
    return 0;
  }

  std::vector<std::string> seeds;
  for (const fs::path &f : filesOf(program, o.corpora))
    seeds.push_back(readFile(program, f));
  if (seeds.empty())
    usageError(program, "the --corpus directories hold no files");
  std::vector<std::string> dictionary;
  if (!o.dictionary.empty()) {
    std::string error;
    dictionary = parseDictionary(readFile(program, o.dictionary), error);
    if (!error.empty())
      usageError(program, "--dict '" + o.dictionary + "': " + error);
  }

  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  std::string seedTag = "seed" + std::to_string(o.seed) + "-";
  for (size_t i = 0; i < seeds.size(); ++i)
    runOne(seeds[i], seedTag + "corpus" + std::to_string(i));

  Mutator mutator(o.seed, seeds, std::move(dictionary), o.maxLength);
  uint64_t run = 0;
  while ((o.runs == 0 || run < o.runs) &&
         (o.seconds == 0 || elapsed() < o.seconds)) {
    std::string input = mutator.next();
    runOne(input, seedTag + "run" + std::to_string(run));
    ++run;
  }
  std::printf("%s: %zu seeds and %llu mutants (--seed %llu) in %.1f s: no "
              "crash, no hang\n",
              program.c_str(), seeds.size(),
              static_cast<unsigned long long>(run),
              static_cast<unsigned long long>(o.seed), elapsed());
  return 0;
}
