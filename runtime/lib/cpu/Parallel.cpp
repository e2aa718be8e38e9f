//===- Parallel.cpp - The threads of a rank's CPU kernels -----------------===//
//
// A fixed pool of workers that sleep on a condition variable between
// loops, so that an idle worker takes no core from the others. Each loop is a
// generation: the caller posts it, the workers run pieces 1.. of it, the caller
// runs piece 0 and waits for the rest.
//
//===----------------------------------------------------------------------===//

#include "Parallel.h"

#include <cblas.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace bitpipe::runtime::cpu {

namespace {

/// Set inside a piece: a parallelFor there runs serially.
thread_local bool tInPiece = false;

class Pool {
public:
  explicit Pool(int workers) {
    for (int w = 0; w < workers; ++w)
      threads_.emplace_back([this, w] { work(w + 1); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    posted_.notify_all();
    for (std::thread &t : threads_)
      t.join();
  }
  void run(int pieces, void (*call)(void *, int), void *context) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      call_ = call;
      context_ = context;
      pieces_ = pieces;
      pending_ = pieces - 1;
      ++generation_;
    }
    posted_.notify_all();
    tInPiece = true;
    call(context, 0);
    tInPiece = false;
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
  }

private:
  void work(int piece) {
    tInPiece = true;
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      posted_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_)
        return;
      seen = generation_;
      if (piece >= pieces_)
        continue;
      auto *call = call_;
      void *context = context_;
      lock.unlock();
      call(context, piece);
      lock.lock();
      if (--pending_ == 0)
        done_.notify_one();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable posted_, done_;
  bool stopping_ = false;
  uint64_t generation_ = 0;
  void (*call_)(void *, int) = nullptr;
  void *context_ = nullptr;
  int pieces_ = 0;
  int pending_ = 0;
};

int gThreads = 1;
std::unique_ptr<Pool> gPool;

} // namespace

void setKernelThreads(int threads) {
  if (threads < 1)
    threads = 1;
  // OpenBLAS stays on the calling thread: the kernels split its products
  // over the pool themselves (Parallel.h says why).
  openblas_set_num_threads(1);
  if (threads == gThreads)
    return;
  gPool.reset();
  if (threads > 1)
    gPool = std::make_unique<Pool>(threads - 1);
  gThreads = threads;
}

int kernelThreads() { return tInPiece ? 1 : gThreads; }

namespace detail {
void runPieces(int pieces, void (*call)(void *, int), void *context) {
  if (!gPool || pieces <= 1) {
    for (int p = 0; p < pieces; ++p)
      call(context, p);
    return;
  }
  gPool->run(pieces, call, context);
}
} // namespace detail

} // namespace bitpipe::runtime::cpu
