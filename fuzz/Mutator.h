//===- Mutator.h - Deterministic seeded mutations of inputs -----*- C++ -*-===//
//
// The mutation driver's source of inputs (docs/robustness.md): each mutant
// is a seed input with one to four mutations stacked on it, chosen by a
// 64-bit Mersenne twister from the driver's --seed, so that a seed and a run
// number name one input on every machine.
//
// Mutations: flip a bit, set a byte, insert a byte, delete a range,
// duplicate a range, splice two seeds, insert a dictionary token, replace a
// number with a dictionary token, and repeat a short piece up to 100,000
// times (deep nesting: "[[[[...", "{\"a\":{\"a\":...").
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_FUZZ_MUTATOR_H
#define BITPIPE_FUZZ_MUTATOR_H

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace bitpipe::fuzz {

class Mutator {
public:
  /// \p seeds must not be empty. Mutants are cut to \p maxLength bytes.
  Mutator(uint64_t seed, std::vector<std::string> seeds,
          std::vector<std::string> dictionary, size_t maxLength);

  /// The next mutant.
  std::string next();

private:
  uint64_t below(uint64_t n); // uniform in [0, n), n > 0
  const std::string &anySeed();
  const std::string &anyToken();
  void mutateOnce(std::string &s);

  std::mt19937_64 rng_;
  std::vector<std::string> seeds_;
  std::vector<std::string> dictionary_;
  size_t maxLength_;
};

/// Tokens of a libFuzzer dictionary file: one `"token"` or `name="token"`
/// per line, with \\, \" and \xNN escapes; `#` starts a comment. Sets
/// \p error and returns nothing on a malformed line.
std::vector<std::string> parseDictionary(const std::string &text,
                                         std::string &error);

} // namespace bitpipe::fuzz

#endif // BITPIPE_FUZZ_MUTATOR_H
