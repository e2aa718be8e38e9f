/*===- MpiCApiTest.c - The communication C ABI, called from C -------*- C -*-===*\
|*                                                                            *|
|* What generated code does, in C99: init, a partner group, a send/recv pair  *|
|* per neighbour, an asynchronous all-reduce waited for later, a broadcast.   *|
|* Any failure aborts the job through bp_comm_abort (non-zero mpirun exit).   *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "bitpipe/comm.h"

#include <stdio.h>

#define CHECK(cond, msg)                                                       \
  do {                                                                         \
    if (!(cond))                                                               \
      bp_comm_abort(2, msg);                                                   \
  } while (0)

int main(int argc, char **argv) {
  float out[8], in[8], grad[4], params[3];
  int64_t rs, rr, ra;
  int32_t all[2] = {1, 0}, group, r, n, peer, i;
  CHECK(bp_comm_init(&argc, &argv) == BP_OK, "init");
  r = bp_comm_rank();
  n = bp_comm_size();
  CHECK(n == 2, "needs 2 ranks");
  peer = 1 - r;
  /* Listed {1, 0}: rank 1 is the group's broadcast root. */
  CHECK(bp_comm_create_group(all, 2, &group) == BP_OK, "group");
  CHECK(group != BP_WORLD_GROUP, "group id");

  for (i = 0; i < 8; ++i)
    out[i] = (float)(r * 10 + i);
  for (i = 0; i < 4; ++i)
    grad[i] = (float)(r + 1);
  CHECK(bp_comm_recv(in, 8, BP_DTYPE_F32, peer, 5, &rr) == BP_OK, "recv");
  CHECK(bp_comm_send(out, 8, BP_DTYPE_F32, peer, 5, &rs) == BP_OK, "send");
  CHECK(bp_allreduce_start(grad, 4, BP_DTYPE_F32, group, &ra) == BP_OK,
        "allreduce start");
  CHECK(bp_comm_wait(rr) == BP_OK && bp_comm_wait(rs) == BP_OK, "p2p wait");
  for (i = 0; i < 8; ++i)
    CHECK(in[i] == (float)(peer * 10 + i), "p2p payload");
  CHECK(bp_allreduce_wait(ra) == BP_OK, "allreduce wait");
  for (i = 0; i < 4; ++i)
    CHECK(grad[i] == 3.0f, "allreduce sum");
  /* A wait on a consumed handle is an error, not a hang. */
  CHECK(bp_comm_wait(rr) == BP_ERR_INVALID_ARGUMENT, "stale handle");

  for (i = 0; i < 3; ++i)
    params[i] = (float)(r * 100 + i);
  CHECK(bp_comm_broadcast(params, 3, BP_DTYPE_F32, group) == BP_OK, "bcast");
  for (i = 0; i < 3; ++i)
    CHECK(params[i] == (float)(100 + i), "broadcast from the first listed");
  CHECK(bp_comm_barrier(BP_WORLD_GROUP) == BP_OK, "barrier");
  if (r == 0)
    printf("C ABI: p2p, all-reduce, broadcast: OK\n");
  return bp_comm_finalize() == BP_OK ? 0 : 1;
}
