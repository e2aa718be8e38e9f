//===- CpuClones.h - Hot loops compiled for two x86-64 levels ---*- C++ -*-===//
//
// The runtime is built for baseline x86-64 (SSE2), so that an executable
// runs on any x86-64 host; its element-wise loops then run 4 floats at a
// time without fused multiply-add. A function marked BP_CPU_CLONES is
// compiled twice, for baseline x86-64 and for x86-64-v3 (AVX2, FMA), and
// the loader binds its symbol to the copy the CPU supports (function
// multiversioning through an ifunc). Exact GELU ran 3x faster in its AVX2
// copy on the development machine (bench/RESULTS.md, "Two copies of the
// kernels"). Mark the function that holds the loop: a lambda inside a
// marked function is compiled once, for baseline x86-64.
//
// Numbers: one host always runs the same copy, so ranks and schedules stay
// bit-identical to one another and to one rank. The two copies differ in
// the last bits (the AVX2 one contracts a * b + c into one rounding), so
// results on hosts with and without AVX2 agree to float tolerance, not bit
// for bit.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_CPUCLONES_H
#define BITPIPE_RUNTIME_CORE_CPUCLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__CUDACC__) &&        \
    defined(__ELF__)
#define BP_CPU_CLONES                                                          \
  __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define BP_CPU_CLONES
#endif

#endif // BITPIPE_RUNTIME_CORE_CPUCLONES_H
