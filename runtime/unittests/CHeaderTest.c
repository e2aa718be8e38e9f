/*===- CHeaderTest.c - runtime.h compiles as C ---------------------*- C -*-===*\
|*                                                                            *|
|* Generated code and other C callers include runtime.h without C++; building *|
|* this file as C99 keeps the header free of C++-only constructs. The test    *|
|* calls one kernel through it so the symbols also link with C linkage.       *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "bitpipe/runtime.h"

int bpCHeaderAddOnePlusTwo(float *out) {
  const float a = 1.0f, b = 2.0f;
  return bp_add_fwd(&a, &b, out, 1) == BP_OK ? 0 : 1;
}
