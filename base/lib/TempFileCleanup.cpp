//===- TempFileCleanup.cpp - Temporaries removed on failure and signals ---===//

#include "bitpipe/base/TempFileCleanup.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <unistd.h>

namespace bitpipe::base {

namespace {

// A fixed table, so that the handler reads no heap structure that another
// thread may be resizing. 64 files written at once is far beyond what any
// tool here does; a path of PATH_MAX bytes cannot be created anyway.
constexpr int kSlots = 64;
constexpr size_t kMaxPath = 4096;

enum SlotState : int { Free = 0, Claimed = 1, Live = 2 };

struct Slot {
  std::atomic<int> state{Free};
  char path[kMaxPath];
};

Slot slots[kSlots];

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGXFSZ};
constexpr int kNumSignals = sizeof(kSignals) / sizeof(kSignals[0]);
struct sigaction previous[kNumSignals];

int signalIndex(int sig) {
  for (int i = 0; i < kNumSignals; ++i)
    if (kSignals[i] == sig)
      return i;
  return -1;
}

void removeLiveTemporaries() {
  for (Slot &s : slots)
    if (s.state.load(std::memory_order_acquire) == Live)
      ::unlink(s.path);
}

/// Set while a previous handler runs: one that calls back into onSignal
/// (it saved ours as its own "previous") ends the chain with the default.
volatile sig_atomic_t chaining = 0;

void onSignal(int sig, siginfo_t *info, void *context) {
  int saved = errno;
  removeLiveTemporaries();
  int i = signalIndex(sig);
  const struct sigaction &before = previous[i];
  if (chaining) {
    // fall through to the default action
  } else if (before.sa_flags & SA_SIGINFO) {
    chaining = 1;
    errno = saved;
    before.sa_sigaction(sig, info, context);
    chaining = 0;
    return;
  } else if (before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN) {
    chaining = 1;
    errno = saved;
    before.sa_handler(sig);
    chaining = 0;
    return;
  }
  // The default action, as if we had never been here: the signal is
  // blocked while this handler runs, so it is delivered, with the default
  // disposition, as soon as the handler returns.
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);
  errno = saved;
}

/// Puts onSignal in front of each signal's disposition, unless it is there
/// already or the signal is ignored. Checked at every registration, not
/// once: a handler the program installs later (a library's, the user's)
/// would otherwise silently take the cleanup away.
void installHandlers() {
  static std::mutex lock;
  std::lock_guard<std::mutex> guard(lock);
  for (int i = 0; i < kNumSignals; ++i) {
    struct sigaction current;
    if (::sigaction(kSignals[i], nullptr, &current) != 0)
      continue;
    bool siginfo = (current.sa_flags & SA_SIGINFO) != 0;
    if (siginfo && current.sa_sigaction == onSignal)
      continue;
    // A signal the process ignores does not end it: nothing to clean.
    if (!siginfo && current.sa_handler == SIG_IGN)
      continue;
    previous[i] = current;
    struct sigaction mine;
    std::memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = onSignal;
    mine.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&mine.sa_mask);
    ::sigaction(kSignals[i], &mine, nullptr);
  }
}

int claimSlot(const std::string &path) {
  installHandlers();
  if (path.size() >= kMaxPath)
    return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = Free;
    if (!slots[i].state.compare_exchange_strong(expected, Claimed,
                                                std::memory_order_acq_rel))
      continue;
    std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
    slots[i].state.store(Live, std::memory_order_release);
    return i;
  }
  return -1;
}

void freeSlot(int slot) {
  if (slot >= 0)
    slots[slot].state.store(Free, std::memory_order_release);
}

} // namespace

RemovedTemporary::RemovedTemporary(std::string path)
    : path_(std::move(path)), slot_(claimSlot(path_)), live_(true) {}

RemovedTemporary::RemovedTemporary(RemovedTemporary &&other) noexcept
    : path_(std::move(other.path_)), slot_(other.slot_), live_(other.live_) {
  other.slot_ = -1;
  other.live_ = false;
}

RemovedTemporary &
RemovedTemporary::operator=(RemovedTemporary &&other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::move(other.path_);
    slot_ = other.slot_;
    live_ = other.live_;
    other.slot_ = -1;
    other.live_ = false;
  }
  return *this;
}

RemovedTemporary::~RemovedTemporary() { remove(); }

void RemovedTemporary::release() {
  freeSlot(slot_);
  slot_ = -1;
  live_ = false;
}

void RemovedTemporary::remove() {
  if (live_)
    ::unlink(path_.c_str());
  release();
}

} // namespace bitpipe::base
