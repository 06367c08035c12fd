// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320, as zlib's crc32): the checkpoint
// format's checksums (crc32.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace spmd {

uint32_t crc32(const void* data, size_t n, uint32_t crc = 0);

}  // namespace spmd
