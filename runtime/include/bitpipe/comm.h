/*===- bitpipe/comm.h - C ABI of the runtime's communication ------*- C -*-===*\
|*                                                                            *|
|* What bitpipe-lower-to-runtime emits for send/recv, the eager gradient      *|
|* all-reduce and the start-up broadcast. One process-wide communicator       *|
|* (MPI on the CPU target), created by bp_comm_init. Requests are int64       *|
|* handles; every wait has the deadline of BITPIPE_COMM_TIMEOUT (seconds,     *|
|* default 300) and returns BP_ERR_TIMEOUT, after printing the rank, peer and *|
|* operation, when it passes. Generated code answers any error with           *|
|* bp_comm_abort, which stops every rank of the job with a non-zero exit.     *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef BITPIPE_COMM_H
#define BITPIPE_COMM_H

#include "bitpipe/runtime.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes beyond runtime.h's (same numbering as the C++ ErrorCode). */
enum {
  BP_ERR_NOT_FOUND = 3,
  BP_ERR_IO = 4,
  BP_ERR_FORMAT = 5,
  BP_ERR_TIMEOUT = 6,
  BP_ERR_COMM = 7,
};

/* Element types (the C++ DType numbering). */
enum {
  BP_DTYPE_F32 = 0,
  BP_DTYPE_BF16 = 1,
  BP_DTYPE_F16 = 2,
  BP_DTYPE_I32 = 3,
  BP_DTYPE_I64 = 4,
  BP_DTYPE_U8 = 5,
  BP_DTYPE_F64 = 6,
};

/* The whole world is group 0. */
#define BP_WORLD_GROUP 0

/* Starts MPI (argc/argv may be NULL) and the process-wide communicator. */
bp_status_t bp_comm_init(int *argc, char ***argv);
/* Finalises. Safe to call when bp_comm_init was not. */
bp_status_t bp_comm_finalize(void);
int32_t bp_comm_rank(void);
int32_t bp_comm_size(void);
/* Overrides the wait deadline (seconds). */
void bp_comm_set_timeout(double seconds);

/* Collective over all ranks, with the same list in the same order on each;
 * ranks[0] is the group's broadcast root. */
bp_status_t bp_comm_create_group(const int32_t *ranks, int32_t n,
                                 int32_t *group);

bp_status_t bp_comm_send(const void *buf, int64_t count, int32_t dtype,
                         int32_t peer, int32_t tag, int64_t *request);
bp_status_t bp_comm_recv(void *buf, int64_t count, int32_t dtype,
                         int32_t peer, int32_t tag, int64_t *request);
bp_status_t bp_comm_wait(int64_t request);

/* In-place sum over a group, asynchronous; waited for before the optimizer. */
bp_status_t bp_allreduce_start(void *buf, int64_t count, int32_t dtype,
                               int32_t group, int64_t *request);
bp_status_t bp_allreduce_wait(int64_t request);

bp_status_t bp_comm_broadcast(void *buf, int64_t count, int32_t dtype,
                              int32_t group);
bp_status_t bp_comm_barrier(int32_t group);

/* Prints "bitpipe: rank R: fatal: MESSAGE" and stops the whole job. */
void bp_comm_abort(int32_t code, const char *message);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BITPIPE_COMM_H */
