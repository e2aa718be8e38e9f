//===- Parallel.h - The threads of a rank's CPU kernels ---------*- C++ -*-===//
//
// A rank may run its kernels on several threads (`--threads`,
// docs/launching.md, "Threads"). The kernels of runtime/lib/cpu/kernels
// split their loops with parallelFor over this pool, their matrix
// products included: each piece calls OpenBLAS on its own rows, and
// OpenBLAS itself runs on the calling thread: its own threads spin for a
// while after each product, and on a machine with as many cores as the
// rank's threads they take the core the kernels' next loop needs
// (bench/results-log.md, "Peers at two threads with OpenBLAS threading its
// own products"). One loop runs at a time, so the rank never runs more
// threads than it was given.
//
// Same bits whatever the thread count, for the kernels' own loops:
// parallelFor hands each piece of the range to one thread, and a kernel
// splits its loops so that every output element is computed by one piece
// in the order the serial loop uses (rows for row-wise work; columns for
// sums over rows, such as a bias's gradient). OpenBLAS's products are the
// exception: a block of rows sums in another order than the whole matrix,
// so the products, and the runs, differ in the last bits between thread
// counts (runtime/unittests/cpu/ThreadsTest.cpp, test/EndToEnd/threads.sh).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CPU_PARALLEL_H
#define BITPIPE_RUNTIME_CPU_PARALLEL_H

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace bitpipe::runtime::cpu {

/// The fewest elements an element-wise kernel gives a thread: tens of
/// microseconds of work, against a few to wake a thread.
inline constexpr int64_t kElementwiseGrain = int64_t(1) << 15;

/// The fewest rows of `width` elements a row-wise kernel gives a thread,
/// and the fewest columns of a sum over `height` rows (a few times the
/// element-wise grain's work, as these loops do more per element).
inline int64_t rowGrain(int64_t width) {
  return width > 0 ? (kElementwiseGrain + width - 1) / width : 1;
}
inline int64_t columnGrain(int64_t height) { return rowGrain(height); }
/// The fewest rows of a matrix product with `rowWork` multiply-adds a row
/// that a thread takes: about a million multiply-adds.
inline int64_t productRowGrain(int64_t rowWork) {
  return rowWork > 0 ? std::max<int64_t>(1, (int64_t(1) << 20) / rowWork) : 1;
}

/// Sets the threads the kernels use (at least 1), the calling thread among
/// them; OpenBLAS is kept on one. Not while a kernel runs.
void setKernelThreads(int threads);
int kernelThreads();

namespace detail {
/// Runs call(context, piece) for piece in [0, pieces) on the pool, piece 0
/// on the calling thread; returns when all have.
void runPieces(int pieces, void (*call)(void *, int), void *context);
} // namespace detail

/// Runs fn(begin, end) on contiguous pieces that together cover [0, n),
/// each at least `grain` long unless n is shorter, at most one per thread.
/// Which elements a piece holds depends only on n, grain and the thread
/// count. Called from inside a piece, it runs the whole range there.
template <typename Fn> void parallelFor(int64_t n, int64_t grain, Fn &&fn) {
  if (n <= 0)
    return;
  const int64_t byGrain = grain > 0 ? (n + grain - 1) / grain : n;
  const int64_t threads = kernelThreads();
  const int pieces = static_cast<int>(byGrain < threads ? byGrain : threads);
  if (pieces <= 1) {
    fn(int64_t(0), n);
    return;
  }
  struct Context {
    std::remove_reference_t<Fn> *fn;
    int64_t n;
    int pieces;
  } context{&fn, n, pieces};
  detail::runPieces(
      pieces,
      [](void *p, int piece) {
        auto *c = static_cast<Context *>(p);
        (*c->fn)(c->n *piece / c->pieces, c->n * (piece + 1) / c->pieces);
      },
      &context);
}

} // namespace bitpipe::runtime::cpu

#endif // BITPIPE_RUNTIME_CPU_PARALLEL_H
