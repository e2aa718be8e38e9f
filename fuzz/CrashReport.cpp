//===- CrashReport.cpp - Save the input that killed the target --*- C++ -*-===//
//
// Everything reachable from the handler uses async-signal-safe calls only
// (open, write, close, signal, raise, alarm): no stdio, no allocation.
//
//===----------------------------------------------------------------------===//

#include "CrashReport.h"

#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <initializer_list>
#include <unistd.h>

using namespace bitpipe::fuzz;

namespace {
const char *gCrashDir = ".";
const char *gTarget = "target";
unsigned gTimeout = 0;
const uint8_t *gData = nullptr;
size_t gSize = 0;
char gLabel[256] = "";
volatile sig_atomic_t gRunning = 0;

// How much of the input the report prints (all of it goes to the file).
constexpr size_t kPrintedBytes = 512;

void say(const char *s) { (void)!::write(2, s, std::strlen(s)); }

// Appends s to buf[0..cap) at *len, always leaving room for the NUL.
void append(char *buf, size_t cap, size_t *len, const char *s) {
  while (*s && *len + 1 < cap)
    buf[(*len)++] = *s++;
  buf[*len] = '\0';
}

const char *kindOf(int sig) {
  switch (sig) {
  case SIGALRM:
    return "hang";
  case SIGABRT:
    return "abort";
  case SIGSEGV:
    return "segv";
  case SIGBUS:
    return "bus";
  case SIGFPE:
    return "fpe";
  case SIGILL:
    return "ill";
  }
  return "crash";
}

// The input, printable bytes as they are and the others as \xNN.
void printInput() {
  static const char hex[] = "0123456789abcdef";
  char out[kPrintedBytes * 4 + 64];
  size_t n = 0;
  size_t shown = gSize < kPrintedBytes ? gSize : kPrintedBytes;
  for (size_t i = 0; i < shown; ++i) {
    uint8_t c = gData[i];
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out[n++] = static_cast<char>(c);
    } else {
      out[n++] = '\\';
      out[n++] = 'x';
      out[n++] = hex[c >> 4];
      out[n++] = hex[c & 15];
    }
  }
  out[n] = '\0';
  say("bitpipe-fuzz: the input: ");
  say(out);
  if (shown < gSize)
    say("...");
  say("\n");
}

void onFatalSignal(int sig) {
  if (gRunning) {
    char path[4096];
    size_t len = 0;
    append(path, sizeof path, &len, gCrashDir);
    append(path, sizeof path, &len, "/");
    append(path, sizeof path, &len, kindOf(sig));
    append(path, sizeof path, &len, "-");
    append(path, sizeof path, &len, gTarget);
    append(path, sizeof path, &len, "-");
    append(path, sizeof path, &len, gLabel);
    int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool saved = fd >= 0;
    for (size_t done = 0; saved && done < gSize;) {
      ssize_t w = ::write(fd, gData + done, gSize - done);
      if (w <= 0)
        saved = false;
      else
        done += static_cast<size_t>(w);
    }
    if (fd >= 0 && ::close(fd) != 0)
      saved = false;
    say("\nbitpipe-fuzz: ");
    say(sig == SIGALRM ? "HANG (the input ran past --timeout)"
                       : "CRASH (fatal signal)");
    say(" in ");
    say(gTarget);
    say(" on input ");
    say(gLabel);
    say(saved ? "; saved to " : "; could not save it to ");
    say(path);
    say("\n");
    printInput();
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}
} // namespace

bool bitpipe::fuzz::installCrashReport(const char *crashDir,
                                       const char *target,
                                       unsigned timeoutSeconds) {
  gCrashDir = crashDir;
  gTarget = target;
  gTimeout = timeoutSeconds;
  // The alternate stack: a stack overflow leaves no room on the main one.
  static char altStack[1 << 16];
  stack_t ss{};
  ss.ss_sp = altStack;
  ss.ss_size = sizeof altStack;
  if (::sigaltstack(&ss, nullptr) != 0)
    return false;
  struct sigaction sa {};
  sa.sa_handler = onFatalSignal;
  sa.sa_flags = SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM})
    if (::sigaction(sig, &sa, nullptr) != 0)
      return false;
  return true;
}

void bitpipe::fuzz::beginInput(const uint8_t *data, size_t size,
                               const char *label) {
  gData = data;
  gSize = size;
  size_t len = 0;
  append(gLabel, sizeof gLabel, &len, label);
  gRunning = 1;
  if (gTimeout)
    ::alarm(gTimeout);
}

void bitpipe::fuzz::endInput() {
  if (gTimeout)
    ::alarm(0);
  gRunning = 0;
}
