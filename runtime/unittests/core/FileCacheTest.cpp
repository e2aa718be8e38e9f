//===- FileCacheTest.cpp - A folder of keyed entries that processes share -===//
//
// core/FileCache.h: an entry comes back as stored; a missing one is no
// problem; a damaged one (cut short, a flipped byte, not an entry) is
// reported and not used; the folder is made at the first store; keys that
// could escape the folder are refused; processes storing the same key at
// once leave one whole entry.
//
//===----------------------------------------------------------------------===//

#include "core/FileCache.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

using namespace bitpipe::runtime;

namespace {

class FileCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/bitpipe-filecache-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + root_ + "'";
    (void)std::system(cmd.c_str());
  }
  std::string slurp(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  void overwrite(const std::string &path, const std::string &text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  }
  std::string root_;
};

TEST_F(FileCacheTest, AnEntryComesBackAsStoredInAFolderMadeForIt) {
  // Two levels that do not exist yet.
  FileCache cache(root_ + "/a/b");
  EXPECT_FALSE(cache.load("plan-1").bytes);
  EXPECT_EQ(cache.load("plan-1").problem, "");
  std::string bytes("{\"json\": 1}\n\0binary", 20);
  ASSERT_TRUE(cache.store("plan-1", bytes).isOk());
  FileCache::Lookup got = cache.load("plan-1");
  ASSERT_TRUE(got.bytes) << got.problem;
  EXPECT_EQ(*got.bytes, bytes);
  // Replaced whole.
  ASSERT_TRUE(cache.store("plan-1", "shorter").isOk());
  EXPECT_EQ(*cache.load("plan-1").bytes, "shorter");
  // An empty entry is an entry.
  ASSERT_TRUE(cache.store("empty", "").isOk());
  ASSERT_TRUE(cache.load("empty").bytes);
  EXPECT_EQ(*cache.load("empty").bytes, "");
}

TEST_F(FileCacheTest, ADamagedEntryIsReportedAndNotUsed) {
  FileCache cache(root_);
  ASSERT_TRUE(cache.store("k", "0123456789").isOk());
  const std::string path = cache.pathOf("k");
  const std::string whole = slurp(path);

  overwrite(path, whole.substr(0, whole.size() - 3));
  FileCache::Lookup cut = cache.load("k");
  EXPECT_FALSE(cut.bytes);
  EXPECT_NE(cut.problem.find("truncated: 7 of 10 bytes"), std::string::npos)
      << cut.problem;

  std::string flipped = whole;
  flipped.back() ^= 1;
  overwrite(path, flipped);
  FileCache::Lookup bad = cache.load("k");
  EXPECT_FALSE(bad.bytes);
  EXPECT_NE(bad.problem.find("corrupt"), std::string::npos) << bad.problem;

  overwrite(path, "{\"some\": \"other file\"}\n");
  FileCache::Lookup other = cache.load("k");
  EXPECT_FALSE(other.bytes);
  EXPECT_NE(other.problem.find("is not a bitpipe cache entry"),
            std::string::npos)
      << other.problem;
  EXPECT_NE(other.problem.find(path), std::string::npos) << other.problem;

  // Stored again, it is whole again.
  ASSERT_TRUE(cache.store("k", "0123456789").isOk());
  EXPECT_EQ(*cache.load("k").bytes, "0123456789");
}

TEST_F(FileCacheTest, KeysCannotEscapeTheFolder) {
  for (const char *key : {"", "../x", "a/b", ".hidden", "a b", "x\n"}) {
    EXPECT_FALSE(FileCache::validKey(key)) << key;
    EXPECT_FALSE(FileCache(root_).store(key, "v").isOk()) << key;
  }
  EXPECT_FALSE(FileCache::validKey(std::string(201, 'a')));
  EXPECT_TRUE(FileCache::validKey(
      "cudnn91600-sm90-132sm-sdpa-bwd-B4-T1024-H2048-nh16-causal"));
}

TEST_F(FileCacheTest, AFolderThatIsAFileIsAnError) {
  overwrite(root_ + "/file", "x");
  Status s = FileCache(root_ + "/file").store("k", "v");
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find(root_ + "/file"), std::string::npos)
      << s.message();
}

// Ranks of a node build the same plan and store it at once: each store
// succeeds and the entry is one of them, whole.
TEST_F(FileCacheTest, ProcessesStoringOneKeyAtOnceLeaveOneWholeEntry) {
  FileCache cache(root_ + "/shared");
  constexpr int kProcesses = 6;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const std::string bytes(100000 + p, static_cast<char>('a' + p));
      bool ok = true;
      for (int i = 0; i < 20; ++i)
        ok = ok && cache.store("same", bytes).isOk();
      ::_exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  FileCache::Lookup got = cache.load("same");
  ASSERT_TRUE(got.bytes) << got.problem;
  const size_t p = got.bytes->size() - 100000;
  ASSERT_LT(p, static_cast<size_t>(kProcesses));
  EXPECT_EQ(*got.bytes, std::string(100000 + p, static_cast<char>('a' + p)));
}

TEST(FileCacheDefault, FollowsXdgThenHome) {
  const char *xdg = std::getenv("XDG_CACHE_HOME");
  const char *home = std::getenv("HOME");
  std::string savedXdg = xdg ? xdg : "", savedHome = home ? home : "";
  ::setenv("XDG_CACHE_HOME", "/x/cache", 1);
  EXPECT_EQ(FileCache::defaultDir(), "/x/cache/bitpipe");
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(FileCache::defaultDir(), "/home/u/.cache/bitpipe");
  ::unsetenv("HOME");
  EXPECT_EQ(FileCache::defaultDir(), "");
  if (xdg)
    ::setenv("XDG_CACHE_HOME", savedXdg.c_str(), 1);
  if (home)
    ::setenv("HOME", savedHome.c_str(), 1);
}

} // namespace
