#include "common/byte_size.hpp"

#include "spmd/error.hpp"

namespace spmd {

uint64_t parse_byte_size(std::string_view text, std::string_view what) {
  std::string why;
  if (auto bytes = try_parse_byte_size(text, &why)) return *bytes;
  raise(ErrorKind::InvalidArgument, std::string(what) + ": '" + std::string(text) + "' is not a byte size (" + why +
                                        "); give bytes, or a number with K, M or G (powers of 1024), e.g. 4096, "
                                        "16K, 512M or 2G");
}

}  // namespace spmd
