//===- Parallel.h - The threads of a rank's CPU kernels ---------*- C++ -*-===//
//
// A rank may run its kernels on several threads (`--threads`,
// docs/launching.md, "Threads"). OpenBLAS runs the matrix products on its
// own threads; the kernels of runtime/lib/cpu/kernels split their loops
// with parallelFor over this pool. One loop runs at a time: a kernel's
// products and its own loops take turns, so the rank never runs more
// threads than it was given.
//
// Same bits whatever the thread count: parallelFor hands each piece of
// the range to one thread, and a kernel splits its loops so that every
// output element is computed by one piece in the order the serial loop
// uses (rows for row-wise work; columns for sums over rows, such as a
// bias's gradient). test/EndToEnd/threads.sh checks whole runs bit for
// bit at 1 and 2 threads.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CPU_PARALLEL_H
#define BITPIPE_RUNTIME_CPU_PARALLEL_H

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

/// Sets the threads the kernels use (at least 1), the calling thread among
/// them, and OpenBLAS's. Not while a kernel runs.
void setKernelThreads(int threads);
int kernelThreads();

namespace detail {
/// Runs call(context, piece) for piece in [0, pieces) on the pool, piece 0
/// on the calling thread; returns when all have. With serialBlas, OpenBLAS
/// runs on one thread meanwhile.
void runPieces(int pieces, void (*call)(void *, int), void *context,
               bool serialBlas);

template <typename Fn>
void parallelFor(int64_t n, int64_t grain, Fn &&fn, bool serialBlas) {
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
      &context, serialBlas);
}
} // namespace detail

/// Runs fn(begin, end) on contiguous pieces that together cover [0, n),
/// each at least `grain` long unless n is shorter, at most one per thread.
/// Which elements a piece holds depends only on n, grain and the thread
/// count. Called from inside a piece, it runs the whole range there.
template <typename Fn> void parallelFor(int64_t n, int64_t grain, Fn &&fn) {
  detail::parallelFor(n, grain, fn, /*serialBlas=*/false);
}

/// parallelFor for pieces that call OpenBLAS: it runs each of their
/// products on the piece's own thread, rather than spreading one over
/// threads the other pieces hold.
template <typename Fn>
void parallelForSerialBlas(int64_t n, int64_t grain, Fn &&fn) {
  detail::parallelFor(n, grain, fn, /*serialBlas=*/true);
}

} // namespace bitpipe::runtime::cpu

#endif // BITPIPE_RUNTIME_CPU_PARALLEL_H
