//===- MetricsLogTest.cpp - --metrics: a log appended per step, checked ---===//
//
// StepLog.h says why --metrics is appended rather than renamed into place;
// what must hold: every line reaches the file at once (users tail it), a
// failed write is an error naming the file (it was exit 0 with an empty
// file), and the destination rule of every output applies.

#include "train/StepLog.h"

#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace bitpipe::runtime;

namespace {

std::string readAll(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class MetricsLogTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/bitpipe-metrics.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    ASSERT_EQ(std::system(("rm -rf '" + dir_ + "'").c_str()), 0);
  }
  std::string dir_;
};

TEST_F(MetricsLogTest, EachLineIsInTheFileAtOnceAndAResumeAppends) {
  std::string path = dir_ + "/metrics.jsonl";
  std::ofstream(path) << "{\"step\":0} from an earlier run\n";
  Expected<std::unique_ptr<MetricsLog>> log = MetricsLog::open(path, false);
  ASSERT_TRUE(log.isOk()) << log.status().message();
  ASSERT_TRUE((*log)->append("{\"step\":1}").isOk());
  EXPECT_EQ(readAll(path), "{\"step\":1}\n"); // before close: tail sees it
  ASSERT_TRUE((*log)->close().isOk());

  Expected<std::unique_ptr<MetricsLog>> resumed = MetricsLog::open(path, true);
  ASSERT_TRUE(resumed.isOk());
  ASSERT_TRUE((*resumed)->append("{\"step\":2}").isOk());
  ASSERT_TRUE((*resumed)->close().isOk());
  EXPECT_EQ(readAll(path), "{\"step\":1}\n{\"step\":2}\n");
}

TEST_F(MetricsLogTest, RefusesADirectoryAndALinkAndWritesIntoDevNull) {
  Expected<std::unique_ptr<MetricsLog>> log = MetricsLog::open(dir_, false);
  ASSERT_FALSE(log.isOk());
  EXPECT_NE(log.status().message().find("is a directory"), std::string::npos);
  std::string link = dir_ + "/link";
  ASSERT_EQ(::symlink("target", link.c_str()), 0);
  log = MetricsLog::open(link, false);
  ASSERT_FALSE(log.isOk());
  EXPECT_NE(log.status().message().find("dangling symbolic link"),
            std::string::npos);
  struct stat st;
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));

  log = MetricsLog::open("/dev/null", false);
  ASSERT_TRUE(log.isOk());
  EXPECT_TRUE((*log)->append("x").isOk());
  EXPECT_TRUE((*log)->close().isOk());
}

TEST_F(MetricsLogTest, AFailedWriteIsAnErrorNamingTheFile) {
  // The file-size limit makes write(2) fail (EFBIG) past 16 bytes: in a
  // child, so that the limit stays there.
  std::string path = dir_ + "/metrics.jsonl";
  pid_t child = ::fork();
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = {16, 16};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    Expected<std::unique_ptr<MetricsLog>> log = MetricsLog::open(path, false);
    if (!log.isOk() || !(*log)->append("{\"step\":1}").isOk())
      ::_exit(2);
    Status s = (*log)->append("{\"step\":2,\"loss\":1.5}");
    ::_exit(!s.isOk() && s.message() == "cannot write '" + path +
                                            "': File too large"
                ? 0
                : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

} // namespace

namespace {

TEST(MetricsLine, WritesEveryKeyAndNullForNonFinite) {
  MetricsLine line;
  line.step = 3;
  line.loss = 4.5;
  line.gradNorm = 1.25;
  line.lr = 0.00055;
  line.tokensPerSecond = 2048;
  line.seconds = 0.25;
  line.bubble = {0.125, 0.5};
  EXPECT_EQ(formatMetricsLine(line),
            "{\"step\":3,\"loss\":4.5,\"grad_norm\":1.25,\"lr\":0.00055,"
            "\"tokens_per_s\":2048,\"seconds\":0.25,\"bubble\":[0.1250,"
            "0.5000]}");
  line.loss = NAN;
  line.evalLoss = INFINITY;
  EXPECT_EQ(formatMetricsLine(line),
            "{\"step\":3,\"loss\":null,\"grad_norm\":1.25,\"lr\":0.00055,"
            "\"tokens_per_s\":2048,\"seconds\":0.25,\"bubble\":[0.1250,"
            "0.5000],\"eval_loss\":null}");
}

} // namespace
