//===- Crc32c.cpp - CRC-32C (Castagnoli) checksums --------------*- C++ -*-===//

#include "Crc32c.h"

#include <array>
#include <cstdio>

namespace bitpipe::runtime {

namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u; // reflected 0x1EDC6F41

/// Slicing-by-8 tables: table[k][b] is the CRC of byte b followed by k zero
/// bytes, so eight input bytes fold in with eight lookups (about 1 GB/s,
/// enough that a checkpoint's checksum costs less than writing it).
struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  constexpr Tables() {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t c = b;
      for (int i = 0; i < 8; ++i)
        c = (c >> 1) ^ ((c & 1) ? kPolynomial : 0);
      t[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; ++b)
      for (int k = 1; k < 8; ++k)
        t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
};

constexpr Tables kTables;

} // namespace

uint32_t crc32c(const void *data, size_t bytes, uint32_t previous) {
  const auto &t = kTables.t;
  const unsigned char *p = static_cast<const unsigned char *>(data);
  uint32_t c = ~previous;
  while (bytes >= 8) {
    // Little-endian load of the first four bytes into the running CRC.
    uint32_t lo =
        c ^
        (static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24);
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^
        t[4][lo >> 24] ^ t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
    p += 8;
    bytes -= 8;
  }
  while (bytes-- > 0)
    c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
  return ~c;
}

std::string crc32cHex(uint32_t crc) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", crc);
  return buf;
}

} // namespace bitpipe::runtime
