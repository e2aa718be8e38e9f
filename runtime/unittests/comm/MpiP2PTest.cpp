//===- MpiP2PTest.cpp - send/recv around a ring (any rank count) ----------===//
//
// Each rank sends to its right neighbour and receives from its left one, with
// two messages whose tags arrive out of order, then checks that a message of
// the wrong size is reported by wait().
//
//===----------------------------------------------------------------------===//

#include "MpiTestUtil.h"

#include <vector>

using namespace bitpipe::runtime;

int main(int argc, char **argv) {
  auto comm = startMpi(&argc, &argv);
  Communicator &c = *comm;
  int r = c.rank(), n = c.size();
  MPI_TEST_CHECK(c, n >= 2, "needs at least 2 ranks, got %d", n);
  int right = (r + 1) % n, left = (r + n - 1) % n;

  const int64_t count = 1 << 16; // past the eager limit: a real rendezvous
  std::vector<float> outA(count), outB(count), inA(count, -1), inB(count, -1);
  for (int64_t i = 0; i < count; ++i) {
    outA[i] = r * 1000.0f + i % 1000;
    outB[i] = -(r * 1000.0f) - i % 7;
  }
  // Receives posted in tag order 1, 2; sends issued in order 2, 1: tags, not
  // arrival order, must pair them.
  auto ra = c.recv(inA.data(), count, DType::F32, left, 1);
  auto rb = c.recv(inB.data(), count, DType::F32, left, 2);
  auto sb = c.send(outB.data(), count, DType::F32, right, 2);
  auto sa = c.send(outA.data(), count, DType::F32, right, 1);
  MPI_TEST_CHECK(c, ra.isOk() && rb.isOk() && sa.isOk() && sb.isOk(),
                 "posting failed");
  MPI_TEST_OK(c, c.wait(*rb));
  MPI_TEST_OK(c, c.wait(*ra));
  MPI_TEST_OK(c, c.wait(*sa));
  MPI_TEST_OK(c, c.wait(*sb));
  for (int64_t i = 0; i < count; ++i) {
    MPI_TEST_CHECK(c, inA[i] == left * 1000.0f + i % 1000,
                   "A[%lld] = %g from rank %d", (long long)i, inA[i], left);
    MPI_TEST_CHECK(c, inB[i] == -(left * 1000.0f) - i % 7, "B[%lld] = %g",
                   (long long)i, inB[i]);
  }
  // A handle is consumed by wait.
  MPI_TEST_CHECK(c, !c.wait(*ra).isOk(), "second wait on a handle succeeded");

  // Size mismatch: the left neighbour sends 5 ints where 8 are expected.
  std::vector<int32_t> small(5, 7), big(8, 0);
  auto rs = c.recv(big.data(), 8, DType::I32, left, 9);
  auto ss = c.send(small.data(), 5, DType::I32, right, 9);
  MPI_TEST_CHECK(c, rs.isOk() && ss.isOk(), "posting failed");
  Status mismatch = c.wait(*rs);
  MPI_TEST_CHECK(c, mismatch.code() == ErrorCode::CommFailure,
                 "size mismatch not reported: '%s'",
                 mismatch.message().c_str());
  MPI_TEST_CHECK(c,
                 mismatch.message().find("received 5 elements, expected 8") !=
                     std::string::npos,
                 "%s", mismatch.message().c_str());
  MPI_TEST_OK(c, c.wait(*ss));

  // Invalid peers are refused up front.
  MPI_TEST_CHECK(c, !c.send(outA.data(), 1, DType::F32, n, 0).isOk(),
                 "send to rank %d accepted", n);
  MPI_TEST_CHECK(c, comm->numPending() == 0, "%zu requests leaked",
                 comm->numPending());
  MPI_TEST_OK(c, c.barrier(kWorldGroup));
  if (r == 0)
    std::printf("p2p ring over %d ranks: OK\n", n);
  return 0;
}
