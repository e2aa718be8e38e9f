/*===- bitpipe/abi/Dropout.h - The limits of a dropout mask -------*- C -*-===*\
|*                                                                            *|
|* The numbers the compiler and the runtime must agree on to draw one mask    *|
|* (docs/training-semantics.md, "Dropout"): a draw's 64-bit counter is        *|
|* site * 2^BP_DROPOUT_SITE_SHIFT + element, so a model has fewer than        *|
|* BP_DROPOUT_MAX_SITES sites and a site's tensor for one micro-batch         *|
|* fewer than 2^BP_DROPOUT_SITE_SHIFT elements. The compiler refuses a        *|
|* model beyond them (ModelLimits.h); the kernels check them again.           *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef BITPIPE_ABI_DROPOUT_H
#define BITPIPE_ABI_DROPOUT_H

/* "dropout!": the stream constant of every dropout draw. */
#define BP_DROPOUT_STREAM 0x64726f706f757421ULL
#define BP_DROPOUT_SITE_SHIFT 40
#define BP_DROPOUT_MAX_SITES (1LL << 24)
/* The words of a micro-batch's random key (the RNG_KEY role). */
#define BP_DROPOUT_KEY_WORDS 4

#endif /* BITPIPE_ABI_DROPOUT_H */
