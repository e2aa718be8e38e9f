//===- AsanOptions.cpp - AddressSanitizer defaults of libFuzzer builds ----===//
//
// Linked into the libFuzzer binaries only (BITPIPE_ENABLE_LIBFUZZER). The
// project's code is compiled with AddressSanitizer there, Debian's LLVM and
// MLIR libraries are not. LLVM's BumpPtrAllocator poisons the memory it
// has not handed out only when the including file is compiled with ASan
// (llvm/Support/Compiler.h), so a slab poisoned by our inlined copy and
// used by MLIR's uninstrumented one reads as use-after-poison at the first
// MLIRContext. Manual poisoning is therefore off; ASan's own checks
// (heap, stack and global overflows, use after free) stay on.
//
//===----------------------------------------------------------------------===//

extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}
