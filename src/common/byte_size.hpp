// The one grammar for a size in bytes, wherever spmd reads one: SPMD_STORE_MAX_MEMORY
// (store/server_config.cpp), the ranges of SPMD_ALGO specs like "shm_flat:0-16K@2"
// (collectives/select.cpp), spmd-bench's -b/-e/-s (tools/spmd-bench/bench_common.hpp).
//
//   SIZE   = NUMBER [UNIT]            blanks around it are ignored
//   NUMBER = DIGITS ["." DIGITS]      "4096", "1.5" (a fraction only where the unit makes
//                                     whole bytes of it: "1.5K" = 1536, "1.5" is an error)
//   UNIT   = ("K" | "M" | "G") ["B" | "iB"]  |  "B"
//            powers of 1024 (K = 1024), any case: "16K", "16k", "16KB", "16KiB", "8B"
//
// Signs, exponents, hex and anything after the unit are errors, and so is a size that does
// not fit in 64 bits.
//
// Header-only and free of the rest of spmd (only the standard library): spmd-bench's peer
// benchmarks (bench/peers/) include it without linking spmd. The raising form,
// parse_byte_size, is in byte_size.cpp.
#pragma once

#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spmd {

// The size `text` names, or nullopt with the reason in *why (e.g. "unknown unit 'X'").
inline std::optional<uint64_t> try_parse_byte_size(std::string_view text, std::string* why = nullptr) {
  auto fail = [why](std::string reason) -> std::optional<uint64_t> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  auto blank = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  if (text.empty()) return fail("it is empty");

  size_t i = 0;
  uint64_t whole = 0;
  for (; i < text.size() && digit(text[i]); ++i) {
    const auto d = static_cast<uint64_t>(text[i] - '0');
    if (whole > (UINT64_MAX - d) / 10) return fail("it is too large");
    whole = whole * 10 + d;
  }
  if (i == 0) return fail("it does not start with a number");
  uint64_t frac = 0, frac_scale = 1;  // the fraction is frac / frac_scale
  if (i < text.size() && text[i] == '.') {
    size_t start = ++i;
    for (; i < text.size() && digit(text[i]); ++i) {
      if (frac_scale >= 1000000000) return fail("it has more than 9 decimals");
      frac = frac * 10 + static_cast<uint64_t>(text[i] - '0');
      frac_scale *= 10;
    }
    if (i == start) return fail("it has no digits after the '.'");
  }

  std::string unit;
  for (char c : text.substr(i)) unit += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  unsigned shift = 0;
  if (!unit.empty() && unit != "B") {
    shift = unit[0] == 'K' ? 10 : unit[0] == 'M' ? 20 : unit[0] == 'G' ? 30 : 0;
    std::string_view rest = std::string_view(unit).substr(1);
    if (shift == 0 || !(rest.empty() || rest == "B" || rest == "IB"))
      return fail("unknown unit '" + std::string(text.substr(i)) + "' (use K, M or G, optionally with B or iB)");
  }

  const uint64_t mult = uint64_t{1} << shift;
  if (whole > UINT64_MAX / mult) return fail("it is too large");
  uint64_t bytes = whole * mult;
  // frac < 10^9 and mult <= 2^30: the product fits in 64 bits.
  if ((frac * mult) % frac_scale != 0) return fail("it is not a whole number of bytes");
  uint64_t extra = frac * mult / frac_scale;
  if (bytes > UINT64_MAX - extra) return fail("it is too large");
  return bytes + extra;
}

// The size `text` names; otherwise raises Error(InvalidArgument):
// "<what>: '<text>' is not a byte size (<why>); give bytes, or e.g. 16K, 512M or 2G ...".
// `what` names where the text came from: "SPMD_STORE_MAX_MEMORY", "--max-bytes".
uint64_t parse_byte_size(std::string_view text, std::string_view what);

}  // namespace spmd
