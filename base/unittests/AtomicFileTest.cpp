//===- AtomicFileTest.cpp - The one writer of every output file -----------===//
//
// The rule of docs/files.md, case by case: what is replaced atomically, what
// is written into, what is refused (and left as it was); failed writes (a
// real full disk on a small tmpfs when the test may mount one, a real
// file-size limit always); temporaries removed on failure, on destruction,
// on SIGTERM/SIGINT (with the signal's own ending or the previous handler),
// and left by killed runs.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/base/AtomicFile.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace bitpipe::base;

namespace {

class AtomicFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/bitpipe-atomicfile.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!mounted_.empty())
      ::umount(mounted_.c_str());
    std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }

  std::string path(const std::string &name) const { return dir_ + "/" + name; }

  static void put(const std::string &p, const std::string &content) {
    std::ofstream(p, std::ios::binary) << content;
  }
  static std::string get(const std::string &p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  static bool exists(const std::string &p) {
    struct stat st;
    return ::lstat(p.c_str(), &st) == 0;
  }
  /// The entries of the test directory but the names in \p except.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    std::string cmd = "ls -A '" + dir_ + "'";
    FILE *ls = ::popen(cmd.c_str(), "r");
    char line[4096];
    while (ls && std::fgets(line, sizeof line, ls)) {
      std::string name(line);
      name.pop_back();
      names.push_back(name);
    }
    if (ls)
      ::pclose(ls);
    return names;
  }
  /// A pid that no process has: a child that has exited and been reaped.
  static pid_t deadPid() {
    pid_t pid = ::fork();
    if (pid == 0)
      ::_exit(0);
    ::waitpid(pid, nullptr, 0);
    return pid;
  }

  std::string dir_;
  std::string mounted_;
};

TEST_F(AtomicFileTest, CreatesAndReplacesRegularFilesLeavingNoTemporary) {
  std::string out = path("out.bin");
  ASSERT_TRUE(writeFileAtomically(out, "first", 5).isOk());
  EXPECT_EQ(get(out), "first");
  ASSERT_TRUE(writeFileAtomically(out, "second", 6).isOk());
  EXPECT_EQ(get(out), "second");
  EXPECT_EQ(entries(), std::vector<std::string>{"out.bin"});
}

TEST_F(AtomicFileTest, UncommittedWriterRemovesItsTemporaryAndKeepsTheOld) {
  std::string out = path("out.bin");
  put(out, "old");
  std::string temp;
  {
    Expected<AtomicFileWriter> w = AtomicFileWriter::open(out);
    ASSERT_TRUE(w.isOk()) << w.status().message();
    EXPECT_EQ(w->kind(), OutputKind::File);
    temp = w->tempPath();
    EXPECT_EQ(temp, out + ".tmp." + std::to_string(::getpid()));
    ASSERT_TRUE(w->write("new", 3).isOk());
    EXPECT_TRUE(exists(temp));
  }
  EXPECT_FALSE(exists(temp));
  EXPECT_EQ(get(out), "old");
}

TEST_F(AtomicFileTest, RefusesADirectory) {
  ASSERT_EQ(::mkdir(path("d").c_str(), 0777), 0);
  Status s = writeFileAtomically(path("d"), "x", 1);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "'" + path("d") +
                             "' is a directory; refusing to replace it with "
                             "a file: expected a regular file or a new name");
  s = writeFileAtomically(path("d") + "/", "x", 1);
  EXPECT_NE(s.message().find("ends with '/'"), std::string::npos)
      << s.message();
  EXPECT_EQ(entries(), std::vector<std::string>{"d"});
}

TEST_F(AtomicFileTest, RefusesSymbolicLinksToFilesDirectoriesAndNothing) {
  put(path("target"), "target");
  ASSERT_EQ(::mkdir(path("d").c_str(), 0777), 0);
  ASSERT_EQ(::symlink("target", path("to-file").c_str()), 0);
  ASSERT_EQ(::symlink("d", path("to-dir").c_str()), 0);
  ASSERT_EQ(::symlink("nowhere", path("dangling").c_str()), 0);
  struct Case {
    const char *link, *says;
  } cases[] = {{"to-file", "is a symbolic link (to 'target')"},
               {"to-dir", "is a symbolic link to a directory ('d')"},
               {"dangling", "is a dangling symbolic link (to 'nowhere')"}};
  for (const Case &c : cases) {
    Status s = writeFileAtomically(path(c.link), "new", 3);
    ASSERT_FALSE(s.isOk()) << c.link;
    EXPECT_EQ(s.message(), "'" + path(c.link) + "' " + c.says +
                               "; refusing to replace the link with a file: "
                               "name the file itself");
    struct stat st;
    ASSERT_EQ(::lstat(path(c.link).c_str(), &st), 0);
    EXPECT_TRUE(S_ISLNK(st.st_mode)) << c.link << " was replaced";
  }
  EXPECT_EQ(get(path("target")), "target");
  EXPECT_FALSE(exists(path("nowhere")));
}

TEST_F(AtomicFileTest, RefusesASocketAndABlockDevice) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string sock = path("sock");
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0);
  Status s = writeFileAtomically(sock, "x", 1);
  ::close(fd);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("is a socket; refusing to replace it"),
            std::string::npos)
      << s.message();
  struct stat st;
  ASSERT_EQ(::lstat(sock.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));

  // A block device node needs CAP_MKNOD (root); /dev/loop0's numbers.
  std::string blk = path("blk");
  if (::mknod(blk.c_str(), S_IFBLK | 0600, makedev(7, 0)) != 0)
    GTEST_SKIP() << "cannot create a block device node here (not root)";
  s = writeFileAtomically(blk, "x", 1);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("is a block device; refusing to replace it"),
            std::string::npos)
      << s.message();
  ASSERT_EQ(::lstat(blk.c_str(), &st), 0);
  EXPECT_TRUE(S_ISBLK(st.st_mode));
}

TEST_F(AtomicFileTest, WritesIntoDevicesFifosAndLinksToThem) {
  // /dev/null, directly and through a link: written into, not replaced.
  ASSERT_EQ(::symlink("/dev/null", path("null").c_str()), 0);
  for (const std::string &p : {std::string("/dev/null"), path("null")}) {
    Expected<AtomicFileWriter> w = AtomicFileWriter::open(p);
    ASSERT_TRUE(w.isOk()) << w.status().message();
    EXPECT_EQ(w->kind(), OutputKind::Stream);
    EXPECT_EQ(w->tempPath(), "");
    ASSERT_TRUE(w->write("x", 1).isOk());
    ASSERT_TRUE(w->commit().isOk());
  }
  struct stat st;
  ASSERT_EQ(::lstat(path("null").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));

  // A FIFO: a reader gets the bytes; the FIFO is still a FIFO.
  std::string fifo = path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  int pipeFds[2];
  ASSERT_EQ(::pipe(pipeFds), 0);
  pid_t reader = ::fork();
  if (reader == 0) {
    int in = ::open(fifo.c_str(), O_RDONLY);
    char buf[64];
    ssize_t n = ::read(in, buf, sizeof buf);
    (void)!::write(pipeFds[1], buf, n > 0 ? static_cast<size_t>(n) : 0);
    ::_exit(0);
  }
  ::close(pipeFds[1]);
  ASSERT_TRUE(writeFileAtomically(fifo, "via fifo", 8).isOk());
  char buf[64] = {};
  ssize_t n = ::read(pipeFds[0], buf, sizeof buf);
  ::close(pipeFds[0]);
  ::waitpid(reader, nullptr, 0);
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), "via fifo");
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(entries().size(), 2u); // the link and the FIFO, no temporary
}

TEST_F(AtomicFileTest, DescriptorNamesAreTheShellsRedirections) {
  // `tool -o /dev/stdout >> log`: /dev/stdout resolves to the regular file
  // log, which is the shell's: appended to through the descriptor, not
  // refused as a link, not replaced, not written from offset 0.
  std::string log = path("log");
  put(log, "head\n");
  pid_t child = ::fork();
  if (child == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_APPEND);
    ::dup2(fd, STDOUT_FILENO);
    Status s = writeFileAtomically("/dev/stdout", "body\n", 5);
    ::_exit(s.isOk() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(get(log), "head\nbody\n");
  EXPECT_EQ(entries(), std::vector<std::string>{"log"});

  // /dev/fd/N of a pipe, as a shell's >(...) names it.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  Expected<AtomicFileWriter> w =
      AtomicFileWriter::open("/dev/fd/" + std::to_string(fds[1]));
  ASSERT_TRUE(w.isOk()) << w.status().message();
  EXPECT_EQ(w->kind(), OutputKind::Stream);
  ASSERT_TRUE(w->write("piped", 5).isOk());
  ASSERT_TRUE(w->commit().isOk());
  ::close(fds[1]);
  char buf[16] = {};
  EXPECT_EQ(::read(fds[0], buf, sizeof buf), 5);
  ::close(fds[0]);
  EXPECT_EQ(std::string(buf), "piped");

  Status s = writeFileAtomically("/dev/fd/987", "x", 1);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(),
            "'/dev/fd/987' names descriptor 987, which is not open");
}

TEST_F(AtomicFileTest, RefusesAMissingOrNonDirectoryParent) {
  Status s = writeFileAtomically(path("no/such/out"), "x", 1);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "'" + path("no/such/out") +
                             "' cannot be created: directory '" +
                             path("no/such") + "' does not exist");
  put(path("file"), "f");
  s = writeFileAtomically(path("file/out"), "x", 1);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("'" + path("file/out") + "' cannot be"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(get(path("file")), "f");
}

TEST_F(AtomicFileTest, FullDiskIsAnErrorAndLeavesTheOldFileAndNoTemporary) {
  // A real full disk: a 64 KiB tmpfs (needs CAP_SYS_ADMIN).
  std::string mnt = path("small");
  ASSERT_EQ(::mkdir(mnt.c_str(), 0777), 0);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (not root): the file-size "
                    "limit test below covers the failed write";
  mounted_ = mnt;
  std::string out = mnt + "/out.bin";
  put(out, "old content");
  std::string big(256 * 1024, 'x');
  Status s = writeFileAtomically(out, big.data(), big.size());
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "cannot write '" + out +
                             "': No space left on device (the previous '" +
                             out + "', if any, is unchanged)");
  EXPECT_EQ(get(out), "old content");
  EXPECT_FALSE(exists(out + ".tmp." + std::to_string(::getpid())));
}

TEST_F(AtomicFileTest, FailedWriteOverTheFileSizeLimitKeepsTheOldFile) {
  // RLIMIT_FSIZE makes write(2) fail with EFBIG past 4 KiB, for anyone; in
  // a child, so that the limit and the ignored SIGXFSZ stay there.
  std::string out = path("out.bin");
  put(out, "old content");
  pid_t child = ::fork();
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = {4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    std::string big(64 * 1024, 'x');
    Status s = writeFileAtomically(out, big.data(), big.size());
    bool expected =
        !s.isOk() && s.message() == "cannot write '" + out +
                                        "': File too large (the previous '" +
                                        out + "', if any, is unchanged)";
    ::_exit(expected ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the write did not fail as expected";
  EXPECT_EQ(get(out), "old content");
  EXPECT_EQ(entries(), std::vector<std::string>{"out.bin"});
}

TEST_F(AtomicFileTest, ADestinationThatBecameALinkIsNotReplaced) {
  std::string out = path("out");
  Expected<AtomicFileWriter> w = AtomicFileWriter::open(out);
  ASSERT_TRUE(w.isOk());
  ASSERT_TRUE(w->write("x", 1).isOk());
  ASSERT_EQ(::symlink("elsewhere", out.c_str()), 0);
  Status s = w->commit();
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("is a dangling symbolic link"), std::string::npos)
      << s.message();
  struct stat st;
  ASSERT_EQ(::lstat(out.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(entries(), std::vector<std::string>{"out"});
}

TEST_F(AtomicFileTest, AnotherProgramWritesTheTemporary) {
  std::string out = path("exe");
  put(out, "old");
  Expected<AtomicFileWriter> w = AtomicFileWriter::open(out);
  ASSERT_TRUE(w.isOk());
  ASSERT_TRUE(w->closeForExternalWriter().isOk());
  // As a linker does: remove the output and create it anew.
  ASSERT_EQ(::unlink(w->tempPath().c_str()), 0);
  put(w->tempPath(), "linked");
  EXPECT_EQ(get(out), "old");
  ASSERT_TRUE(w->commit().isOk());
  EXPECT_EQ(get(out), "linked");
  EXPECT_EQ(entries(), std::vector<std::string>{"exe"});

  Expected<AtomicFileWriter> stream = AtomicFileWriter::open("/dev/null");
  ASSERT_TRUE(stream.isOk());
  EXPECT_FALSE(stream->closeForExternalWriter().isOk());
}

TEST_F(AtomicFileTest, StaleTemporariesOfDeadProcessesAreRemovedWithANote) {
  std::string out = path("model.safetensors");
  std::string stale = out + ".tmp." + std::to_string(deadPid());
  std::string running = out + ".tmp." + std::to_string(::getppid());
  std::string other = path("other.safetensors.tmp.1");
  put(stale, "half a checkpoint");
  put(running, "another run's");
  put(other, "another file's");
  testing::internal::CaptureStderr();
  ASSERT_TRUE(writeFileAtomically(out, "new", 3).isOk());
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(exists(stale));
  EXPECT_TRUE(exists(running));
  EXPECT_TRUE(exists(other));
  EXPECT_EQ(err, "note: removed '" + stale +
                     "', a temporary file left by process " +
                     stale.substr(stale.rfind('.') + 1) +
                     ", which no longer runs (an interrupted write of '" + out +
                     "')\n");
  EXPECT_EQ(get(out), "new");
}

/// A child that opens a writer for \p out, writes, tells the parent the
/// temporary exists, and waits for a signal; \p setup runs first.
template <typename Setup>
pid_t childWritingForever(const std::string &out, Setup setup) {
  int ready[2];
  if (::pipe(ready) != 0)
    return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    setup();
    Expected<AtomicFileWriter> w = AtomicFileWriter::open(out);
    if (!w.isOk() || !w->write("partial", 7).isOk())
      ::_exit(2);
    (void)!::write(ready[1], "r", 1);
    for (;;)
      ::pause();
  }
  ::close(ready[1]);
  char c;
  bool up = ::read(ready[0], &c, 1) == 1;
  ::close(ready[0]);
  return up ? pid : -1;
}

TEST_F(AtomicFileTest, SigtermAndSigintRemoveTheTemporaryAndEndTheProcess) {
  std::string out = path("out.bin");
  put(out, "old");
  for (int sig : {SIGTERM, SIGINT}) {
    pid_t child = childWritingForever(out, [] {});
    ASSERT_GT(child, 0);
    std::string temp = out + ".tmp." + std::to_string(child);
    EXPECT_TRUE(exists(temp));
    ASSERT_EQ(::kill(child, sig), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "signal " << sig;
    EXPECT_EQ(WTERMSIG(status), sig);
    EXPECT_FALSE(exists(temp)) << "signal " << sig;
    EXPECT_EQ(get(out), "old");
  }
  EXPECT_EQ(entries(), std::vector<std::string>{"out.bin"});
}

void exitSeven(int) { ::_exit(7); }

TEST_F(AtomicFileTest, APreviousSignalHandlerStillRunsAfterTheCleanup) {
  std::string out = path("out.bin");
  pid_t child = childWritingForever(out, [] { ::signal(SIGTERM, exitSeven); });
  ASSERT_GT(child, 0);
  ASSERT_EQ(::kill(child, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7);
  EXPECT_TRUE(entries().empty());
}

TEST_F(AtomicFileTest, RemovedTemporaryCanBeReleasedOrRemovedEarly) {
  std::string kept = path("kept"), dropped = path("dropped");
  {
    RemovedTemporary a(kept), b(dropped);
    put(kept, "k");
    put(dropped, "d");
    EXPECT_TRUE(a.coveredBySignals());
    a.release();
    b.remove();
    EXPECT_FALSE(exists(dropped));
  }
  EXPECT_TRUE(exists(kept));
}

} // namespace
