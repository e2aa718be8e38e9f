//===- FlagsTest.cpp - The flag helper of the runtime's programs ----------===//
//
// The training executables' own flags are tested through their table
// (exec/OptionsTest.cpp); this is what the tools and benchmarks rely on
// besides: short names, positional arguments, values that look like flags,
// and the help text.

#include "core/Flags.h"

#include <gtest/gtest.h>

#include <vector>

using namespace bitpipe::runtime;

namespace {

Status parse(const FlagSet &flags, std::vector<const char *> args,
             std::vector<std::string> *positional = nullptr) {
  args.insert(args.begin(), "tool");
  return flags.parse(static_cast<int>(args.size()),
                     const_cast<char **>(args.data()), positional);
}

TEST(CoreFlags, ReadsValuesSwitchesAndPositionals) {
  std::string out;
  int64_t count = 0;
  double rate = 0;
  bool verbose = false;
  FlagSet flags;
  flags.text("-o", "PATH", "output", &out)
      .integer("--count", "N", "count", &count, 0)
      .number("--rate", "X", "rate", &rate, 0, /*strict=*/true)
      .toggle("--verbose", "talk", &verbose);
  std::vector<std::string> files;
  Status s = parse(flags,
                   {"a.txt", "-o", "out.bin", "--count=3", "b.txt", "--rate",
                    "0.5", "--verbose"},
                   &files);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(out, "out.bin");
  EXPECT_EQ(count, 3);
  EXPECT_DOUBLE_EQ(rate, 0.5);
  EXPECT_TRUE(verbose);
  EXPECT_EQ(files, (std::vector<std::string>{"a.txt", "b.txt"}));
}

TEST(CoreFlags, NamesTheFlagInEveryError) {
  int64_t count = 0;
  double rate = 0;
  bool verbose = false;
  FlagSet flags;
  flags.integer("--count", "N", "count", &count, 1)
      .number("--rate", "X", "rate", &rate, 0, /*strict=*/false)
      .toggle("--verbose", "talk", &verbose);
  struct Case {
    std::vector<const char *> args;
    const char *message;
  } cases[] = {
      {{"--nope"}, "unknown flag '--nope' (see --help)"},
      {{"--count"}, "flag --count needs a value (N)"},
      // The next argument is the value, even when it looks like a flag.
      {{"--count", "-2"}, "flag --count: '-2' is not a positive integer"},
      {{"--count", "3x"}, "flag --count: '3x' is not a positive integer"},
      {{"--rate", "inf"}, "flag --rate: 'inf' is not a non-negative number"},
      {{"--verbose=yes"}, "flag --verbose takes no value"},
      {{"file"}, "unexpected argument 'file'"},
  };
  for (const Case &c : cases) {
    Status s = parse(flags, c.args);
    ASSERT_FALSE(s.isOk()) << c.message;
    EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(s.message().find(c.message), std::string::npos)
        << "expected \"" << c.message << "\" in \"" << s.message() << "\"";
  }
}

TEST(CoreFlags, HelpListsEveryFlagInOrder) {
  std::string a;
  bool b = false;
  FlagSet flags;
  flags.text("--alpha", "PATH", "the first", &a)
      .toggle("--a-very-long-switch-name-indeed", "the second", &b);
  EXPECT_EQ(flags.help(), "  --alpha PATH                  the first\n"
                          "  --a-very-long-switch-name-indeed\n"
                          "                                the second\n");
}

} // namespace
