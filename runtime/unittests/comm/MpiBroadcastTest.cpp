//===- MpiBroadcastTest.cpp - Initial parameters from the group's first rank -===//
//
// Four ranks. (1) A subgroup listed {2, 1, 3} broadcasts from rank 2, its
// first rank, not from the lowest rank; rank 0, outside, keeps its values.
// (2) Parameters initialised on rank 0 from (seed, name) and broadcast over
// the world equal what every rank initialises locally: the broadcast and the
// deterministic init agree. (3) Bubble fractions and trace events gather to
// rank 0, which writes one Chrome trace (path in argv[1]).
//
//===----------------------------------------------------------------------===//

#include "MpiTestUtil.h"
#include "core/Json.h"
#include "train/Init.h"
#include "train/StepLog.h"
#include "train/Trace.h"

#include <fstream>
#include <sstream>
#include <vector>

using namespace bitpipe::runtime;

int main(int argc, char **argv) {
  auto comm = startMpi(&argc, &argv);
  Communicator &c = *comm;
  int r = c.rank();
  MPI_TEST_CHECK(c, c.size() == 4, "needs 4 ranks, got %d", c.size());
  MPI_TEST_CHECK(c, argc >= 2, "usage: %s TRACE.json", argv[0]);
  TraceRecorder trace;
  MPI_TEST_OK(c, c.barrier(kWorldGroup));
  trace.resetEpoch();

  // (1) Subgroup broadcast, root = first listed rank.
  auto g = c.createGroup({2, 1, 3});
  MPI_TEST_CHECK(c, g.isOk(), "createGroup");
  MPI_TEST_CHECK(c, c.groupRanks(*g).front() == 2, "group order lost");
  std::vector<float> w(5000);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = float(r * 100000 + i);
  if (c.isMember(*g)) {
    TraceRecorder::Scope s(trace, "broadcast w", TraceCategory::Other);
    MPI_TEST_OK(c, c.broadcast(w.data(), int64_t(w.size()), DType::F32, *g));
  } else {
    MPI_TEST_CHECK(c, !c.broadcast(w.data(), 1, DType::F32, *g).isOk(),
                   "non-member broadcast accepted");
  }
  int from = c.isMember(*g) ? 2 : r;
  for (size_t i = 0; i < w.size(); ++i)
    MPI_TEST_CHECK(c, w[i] == float(from * 100000 + i), "w[%zu] = %g", i,
                   w[i]);

  // (2) Deterministic init agrees with broadcast from rank 0.
  const int64_t n = 4096;
  std::vector<float> local(n), received(n, 0.f);
  {
    TraceRecorder::Scope s(trace, "init", TraceCategory::Forward);
    initNormal(local.data(), n, 0.02, 1234, "h.1.attn.c_proj.weight");
  }
  if (r == 0)
    received = local;
  MPI_TEST_OK(c, c.broadcast(received.data(), n, DType::F32, kWorldGroup));
  MPI_TEST_CHECK(c, received == local, "rank %d initialised differently", r);

  // (3) Bubble fractions and trace to rank 0.
  double bubble = 0.1 * (r + 1);
  std::vector<double> all;
  MPI_TEST_OK(c, gatherBubbleFractions(c, bubble, &all));
  if (r == 0) {
    MPI_TEST_CHECK(c, all.size() == 4, "gathered %zu", all.size());
    for (int k = 0; k < 4; ++k)
      MPI_TEST_CHECK(c, all[k] == 0.1 * (k + 1), "bubble of rank %d", k);
  } else {
    MPI_TEST_CHECK(c, all.empty(), "non-root got data");
  }
  trace.record("B" + std::to_string(r), TraceCategory::Backward,
               trace.nowUs(), 1.0);
  MPI_TEST_OK(c, gatherAndWriteChromeTrace(c, trace, argv[1]));
  if (r == 0) {
    std::ifstream in(argv[1]);
    std::stringstream ss;
    ss << in.rdbuf();
    auto json = parseJson(ss.str());
    MPI_TEST_CHECK(c, json.isOk(), "trace is not JSON: %s",
                   json.status().message().c_str());
    std::vector<int> backwardPerPid(4, 0);
    for (const JsonValue &e : json->get("traceEvents")->array)
      if (e.get("cat") && e.get("cat")->string == "backward") {
        int pid = int(e.get("pid")->integer);
        MPI_TEST_CHECK(c, e.get("name")->string == "B" + std::to_string(pid),
                       "event of rank %d under pid %d", pid, pid);
        ++backwardPerPid[pid];
      }
    MPI_TEST_CHECK(c, backwardPerPid == std::vector<int>(4, 1),
                   "not one backward event per rank");
    std::printf("broadcast, init agreement and trace merge: OK\n");
  }
  return 0;
}
