/*===- CudaHeaderTest.c - bitpipe/cuda.h compiles as C -------------*- C -*-===*\
|*                                                                            *|
|* Generated code calls the CUDA kernels through the same plain-C ABI as the  *|
|* CPU ones; building this file as C99 keeps cuda.h free of C++ and CUDA      *|
|* constructs. The call links with C linkage and needs no device.            *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "bitpipe/cuda.h"

int bpCudaHeaderStatsCallable(void) {
  int64_t inUse = -1;
  bp_cuda_memory_stats(&inUse, 0, 0);
  return inUse >= 0 && BP_ERR_DEVICE == 8 ? 0 : 1;
}
