//===- Crc32c.h - CRC-32C (Castagnoli) checksums ----------------*- C++ -*-===//
//
// The checksum of checkpoint tensors (docs/runtime-abi.md, "Checkpoints"):
// CRC-32C, the iSCSI/ext4/safetensors-world polynomial 0x1EDC6F41 (reflected
// 0x82F63B78), initial value and final xor 0xFFFFFFFF. It detects every
// burst error up to 32 bits and any odd number of flipped bits, which is
// what a byte flip on disk or in transit is; it is not a defence against a
// deliberate forger (nothing in a checkpoint is).
//
// Incremental: crc32c(b, crc32c(a)) == crc32c(a + b), so a tensor can be
// checksummed in pieces.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_CRC32C_H
#define BITPIPE_RUNTIME_CORE_CRC32C_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace bitpipe::runtime {

/// CRC-32C of \p bytes bytes at \p data, continuing from \p previous (the
/// CRC of what came before; 0 for a fresh start).
uint32_t crc32c(const void *data, size_t bytes, uint32_t previous = 0);

/// \p crc as the 8 lower-case hex digits the checkpoint metadata stores.
std::string crc32cHex(uint32_t crc);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CORE_CRC32C_H
