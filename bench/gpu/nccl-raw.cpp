//===- nccl-raw.cpp - Raw NCCL calls at the sizes a run uses --------------===//
//
// The yardstick for the runtime's communication: the same
// transfers as a compiled run makes, issued straight to NCCL with nothing
// around them, in the manner of nccl-tests. Started like the executables
// (mpirun -np N, one GPU per node-local rank mod device count, several
// ranks on one GPU given distinct NCCL_HOSTIDs: docs/launching.md):
//
//   nccl-raw [--iters N] [--warmup W] [--p2p BYTES]...
//            [--allreduce BYTES:RANK,RANK,...]...
//
//   --p2p BYTES       ping-pong between ranks 2i and 2i+1, all pairs at once
//                     (the pipeline's neighbours transfer at the same time):
//                     even ranks send then receive, odd ranks the reverse;
//                     the time of one message is a round trip's half.
//   --allreduce B:G   an in-place fp32 sum of B bytes over the ranks G (a
//                     communicator split off the world's, once per distinct
//                     G), as a bucket of the run is; disjoint groups run at
//                     the same time, as in the run.
// Each result is the mean over N timed iterations after W untimed ones,
// host clock around the calls and a stream synchronisation (what the host
// of a run waits for). Prints, from rank 0, per size:
//   NCCLRAW p2p bytes=B us=T GBps=X
//   NCCLRAW allreduce bytes=B ranks=G us=T algGBps=X busGBps=Y
// (nccl-tests' bus bandwidth: algorithm bandwidth x 2 (n - 1) / n).
//
//===----------------------------------------------------------------------===//

#include "comm/nccl/GpuSharing.h"

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

int worldRank = 0;

[[noreturn]] void die(const std::string &message) {
  std::fprintf(stderr, "nccl-raw: rank %d: %s\n", worldRank, message.c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    die(std::string(what) + ": " + cudaGetErrorString(e));
}

void check(ncclResult_t r, const char *what) {
  if (r != ncclSuccess)
    die(std::string(what) + ": " + ncclGetErrorString(r));
}

struct AllReduceCase {
  long long bytes = 0;
  std::vector<int> ranks;
  std::string spec; // the ranks as given, for the output
};

long long parseBytes(const char *text, const char *flag) {
  char *end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (end == text || v <= 0 || v % 4 != 0)
    die(std::string(flag) + " wants a positive byte count, a multiple of 4 "
                            "(fp32 elements), not '" + text + "'");
  return v;
}

AllReduceCase parseAllReduce(const char *text, int worldSize) {
  const char *colon = std::strchr(text, ':');
  if (!colon)
    die(std::string("--allreduce wants BYTES:RANK,RANK,..., not '") + text +
        "'");
  AllReduceCase c;
  c.bytes = parseBytes(std::string(text, colon).c_str(), "--allreduce");
  c.spec = colon + 1;
  const char *p = colon + 1;
  while (*p) {
    char *end = nullptr;
    long r = std::strtol(p, &end, 10);
    if (end == p || r < 0 || r >= worldSize)
      die(std::string("--allreduce: bad rank list '") + (colon + 1) +
          "' (ranks in [0, " + std::to_string(worldSize) + "))");
    c.ranks.push_back(static_cast<int>(r));
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',')
      die(std::string("--allreduce: bad rank list '") + (colon + 1) + "'");
  }
  return c;
}

double seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int worldSize = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);

  int iters = 20, warmup = 5;
  std::vector<long long> p2p;
  std::vector<AllReduceCase> allReduces;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc)
      die("'" + a + "' needs a value (see the header of bench/gpu/nccl-raw.cpp)");
    const char *v = argv[++i];
    if (a == "--iters")
      iters = std::atoi(v);
    else if (a == "--warmup")
      warmup = std::atoi(v);
    else if (a == "--p2p")
      p2p.push_back(parseBytes(v, "--p2p"));
    else if (a == "--allreduce")
      allReduces.push_back(parseAllReduce(v, worldSize));
    else
      die("unknown flag '" + a + "' (--iters, --warmup, --p2p, --allreduce)");
  }
  if (iters < 1 || warmup < 0)
    die("--iters must be >= 1 and --warmup >= 0");

  // Rank -> GPU as the runtime does it: the node-local rank mod the device
  // count (docs/launching.md).
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, worldRank,
                      MPI_INFO_NULL, &local);
  int localRank = 0, localSize = 1, devices = 0;
  MPI_Comm_rank(local, &localRank);
  MPI_Comm_size(local, &localSize);
  check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices < 1)
    die("no CUDA device");
  // The runtime's own placement and GPU-sharing settings (GpuSharing.h,
  // docs/runtime-abi.md, "Communication on each target"), so that both
  // measure one transport; set before ncclGetUniqueId, which reads the
  // socket settings.
  bitpipe::runtime::Expected<bitpipe::runtime::DevicePlan> plan =
      bitpipe::runtime::planDevice(localRank, localSize, devices);
  if (!plan.isOk())
    die(plan.status().message().c_str());
  check(cudaSetDevice(plan->device), "cudaSetDevice");
  if (plan->sharing) {
    std::vector<std::string> set =
        bitpipe::runtime::arrangeGpuSharing(worldRank);
    if (worldRank == 0) {
      std::printf("nccl-raw: %d ranks share %d GPU(s) on this node; set:",
                  localSize, devices);
      for (const std::string &v : set)
        std::printf(" %s", v.c_str());
      std::printf("\n");
    }
  }

  ncclUniqueId id;
  if (worldRank == 0)
    check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t world;
  check(ncclCommInitRank(&world, worldSize, id, worldRank), "ncclCommInitRank");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
        "cudaStreamCreate");

  long long maxBytes = 4;
  for (long long b : p2p)
    maxBytes = std::max(maxBytes, b);
  for (const AllReduceCase &c : allReduces)
    maxBytes = std::max(maxBytes, c.bytes);
  void *sendBuf = nullptr, *recvBuf = nullptr;
  check(cudaMalloc(&sendBuf, maxBytes), "cudaMalloc");
  check(cudaMalloc(&recvBuf, maxBytes), "cudaMalloc");
  check(cudaMemset(sendBuf, 0, maxBytes), "cudaMemset");
  check(cudaMemset(recvBuf, 0, maxBytes), "cudaMemset");

  // Point to point: pairs (2i, 2i+1); a last odd rank sits out.
  const int peer = worldRank ^ 1;
  const bool paired = peer < worldSize;
  for (long long bytes : p2p) {
    const size_t count = static_cast<size_t>(bytes / 4);
    auto message = [&](bool sending) {
      if (sending)
        check(ncclSend(sendBuf, count, ncclFloat32, peer, world, stream),
              "ncclSend");
      else
        check(ncclRecv(recvBuf, count, ncclFloat32, peer, world, stream),
              "ncclRecv");
    };
    double elapsed = 0;
    for (int it = 0; it < warmup + iters; ++it) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = seconds();
      if (paired) {
        const bool even = worldRank % 2 == 0;
        message(even);
        message(!even);
        check(cudaStreamSynchronize(stream), "ping-pong");
      }
      if (it >= warmup)
        elapsed += seconds() - t0;
    }
    if (worldRank == 0) {
      double us = elapsed / iters / 2 * 1e6;
      std::printf("NCCLRAW p2p bytes=%lld us=%.1f GBps=%.3f\n", bytes, us,
                  bytes / us * 1e-3);
    }
  }

  // All-reduce: one communicator per distinct group, split once.
  std::map<std::string, ncclComm_t> groups;
  for (const AllReduceCase &c : allReduces) {
    if (groups.count(c.spec))
      continue;
    int key = -1;
    for (size_t i = 0; i < c.ranks.size(); ++i)
      if (c.ranks[i] == worldRank)
        key = static_cast<int>(i);
    ncclComm_t sub = nullptr;
    check(ncclCommSplit(world, key >= 0 ? 0 : NCCL_SPLIT_NOCOLOR,
                        key >= 0 ? key : 0, &sub, nullptr),
          "ncclCommSplit");
    groups[c.spec] = sub;
  }
  // Every rank takes part in every split above in the same order; cases
  // whose groups are disjoint then run at once (the barrier is per case).
  for (const AllReduceCase &c : allReduces) {
    ncclComm_t sub = groups[c.spec];
    const size_t count = static_cast<size_t>(c.bytes / 4);
    double elapsed = 0;
    for (int it = 0; it < warmup + iters; ++it) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = seconds();
      if (sub) {
        check(ncclAllReduce(recvBuf, recvBuf, count, ncclFloat32, ncclSum, sub,
                            stream),
              "ncclAllReduce");
        check(cudaStreamSynchronize(stream), "all-reduce");
      }
      if (it >= warmup)
        elapsed += seconds() - t0;
    }
    // The time of the group's first rank, reported by rank 0.
    double us = elapsed / iters * 1e6;
    double reported = us;
    const int first = c.ranks.front();
    if (first != 0) {
      if (worldRank == first)
        MPI_Send(&us, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
      if (worldRank == 0)
        MPI_Recv(&reported, 1, MPI_DOUBLE, first, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    }
    if (worldRank == 0) {
      const double n = static_cast<double>(c.ranks.size());
      const double alg = c.bytes / reported * 1e-3;
      std::printf("NCCLRAW allreduce bytes=%lld ranks=%s us=%.1f "
                  "algGBps=%.3f busGBps=%.3f\n",
                  c.bytes, c.spec.c_str(), reported, alg,
                  n > 1 ? alg * 2 * (n - 1) / n : 0.0);
    }
  }
  std::fflush(stdout);

  for (auto &g : groups)
    if (g.second)
      ncclCommDestroy(g.second);
  ncclCommDestroy(world);
  cudaFree(sendBuf);
  cudaFree(recvBuf);
  MPI_Comm_free(&local);
  MPI_Finalize();
  return 0;
}
