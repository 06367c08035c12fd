// What spmd-bench and the peer benchmarks (bench/peers/) share: the command line, the list of
// sizes, the collectives' shapes (collective_shape.hpp) and the one table/CSV format they all
// print, so their outputs can be compared line by line (bench/compare.sh reads the CSV).
// Header-only and free of spmd's library: the Gloo and MPI peers include it without linking spmd
// (src/common/byte_size.hpp, which it includes, is header-only too).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../src/common/byte_size.hpp"  // by path: the peers see no spmd include directory
#include "collective_shape.hpp"

namespace bench {

struct Options {
  std::string collective = "all_reduce";
  std::string dtype = "f32";
  std::string op = "sum";
  int root = 0;
  size_t min_bytes = 8;
  size_t max_bytes = size_t{64} << 20;
  double step_factor = 2.0;
  std::vector<size_t> sizes;  // --sizes: an explicit list replaces -b/-e/-f
  int iters = 20;
  int warmup = 5;
  bool warmup_given = false;  // -w on the command line (spmd-bench warms up longer across hosts otherwise)
  bool csv = false;
  bool csv_header = true;
  std::string impl;  // the name in the CSV's first column ("spmd", "gloo", "mpi-tcp", ...)
  std::string algo;  // peer-specific algorithm choice (Gloo: default, ring, hd)
};

// "8", "64K", "1M", "2GiB" -> bytes: spmd's one byte-size grammar (src/common/byte_size.hpp,
// header-only and free of spmd, so the peers can include it too).
inline size_t parse_size(const std::string& text) {
  std::string why;
  std::optional<uint64_t> bytes = spmd::try_parse_byte_size(text, &why);
  if (!bytes) throw std::invalid_argument("bad size '" + text + "': " + why + " (e.g. 8, 64K, 1M or 2G)");
  return static_cast<size_t>(*bytes);
}

// "8,1K,64K" -> {8, 1024, 65536}
inline std::vector<size_t> parse_size_list(const std::string& text) {
  std::vector<size_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) out.push_back(parse_size(text.substr(start, comma - start)));
    start = comma + 1;
  }
  if (out.empty()) throw std::invalid_argument("empty --sizes list");
  return out;
}

inline const char* common_usage() {
  return "  -c, --collective LIST  collective(s) to run, comma-separated (default all_reduce)\n"
         "  -b, --min-bytes SIZE   smallest message (default 8; K, M, G suffixes)\n"
         "  -e, --max-bytes SIZE   largest message (default 64M)\n"
         "  -f, --step-factor F    multiply the size by F each step (default 2)\n"
         "  -s, --sizes LIST       explicit sizes, e.g. 8,1K,64K,1M (replaces -b/-e/-f)\n"
         "  -n, --iters N          timed iterations per size (default 20)\n"
         "  -w, --warmup N         untimed iterations per size (default 5)\n"
         "  -d, --dtype T          element type (default f32)\n"
         "  -o, --op OP            reduction: sum, prod, min, max, avg, band, bor, bxor (default sum)\n"
         "  -r, --root R           root rank of rooted collectives (default 0)\n"
         "      --csv              machine-readable output (one header line, then rows)\n"
         "      --no-header        with --csv: omit the header line\n"
         "  -h, --help             this text\n";
}

// Parses the shared flags; returns false (after printing usage) for --help. `extra` handles
// flags specific to one program: it gets (flag, value-or-null) and returns how many
// arguments it consumed (0 = unknown flag).
template <typename Extra>
bool parse_args(int argc, char** argv, Options& o, const char* usage_head, Extra extra) {
  auto need = [&](int& i) -> std::string {
    if (i + 1 >= argc) throw std::invalid_argument(std::string("flag ") + argv[i] + " needs a value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::printf("%s\n\nOptions:\n%s", usage_head, common_usage());
      return false;
    } else if (a == "-c" || a == "--collective") o.collective = need(i);
    else if (a == "-b" || a == "--min-bytes") o.min_bytes = parse_size(need(i));
    else if (a == "-e" || a == "--max-bytes") o.max_bytes = parse_size(need(i));
    else if (a == "-f" || a == "--step-factor") o.step_factor = std::stod(need(i));
    else if (a == "-s" || a == "--sizes") o.sizes = parse_size_list(need(i));
    else if (a == "-n" || a == "--iters") o.iters = std::stoi(need(i));
    else if (a == "-w" || a == "--warmup") {
      o.warmup = std::stoi(need(i));
      o.warmup_given = true;
    }
    else if (a == "-d" || a == "--dtype") o.dtype = need(i);
    else if (a == "-o" || a == "--op") o.op = need(i);
    else if (a == "-r" || a == "--root") o.root = std::stoi(need(i));
    else if (a == "--csv") o.csv = true;
    else if (a == "--no-header") o.csv_header = false;
    else {
      int used = extra(a, i + 1 < argc ? argv[i + 1] : nullptr);
      if (used == 0) throw std::invalid_argument("unknown flag '" + a + "' (see --help)");
      i += used - 1;
    }
  }
  if (o.iters < 1 || o.warmup < 0) throw std::invalid_argument("--iters must be >= 1 and --warmup >= 0");
  if (o.sizes.empty() && (o.step_factor <= 1.0 && o.min_bytes != o.max_bytes))
    throw std::invalid_argument("--step-factor must be > 1");
  if (o.sizes.empty() && o.min_bytes > o.max_bytes) throw std::invalid_argument("--min-bytes > --max-bytes");
  return true;
}

// -c accepts a comma-separated list ("all_reduce,broadcast"): one table per collective.
inline std::vector<std::string> collective_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  if (out.empty()) throw std::invalid_argument("empty --collective");
  return out;
}

inline std::vector<size_t> size_list(const Options& o) {
  if (!o.sizes.empty()) return o.sizes;
  std::vector<size_t> out;
  for (double s = static_cast<double>(o.min_bytes); s <= static_cast<double>(o.max_bytes) * 1.0000001;
       s *= o.step_factor) {
    out.push_back(static_cast<size_t>(s));
    if (o.step_factor <= 1.0) break;
  }
  return out;
}

// A flag's count: a whole number from 1 to 1,000,000, or an error naming the flag.
inline int positive(const std::string& flag, const std::string& value) {
  char* end = nullptr;
  long v = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || v < 1 || v > 1000000)
    throw std::invalid_argument(flag + " needs a positive whole number, not '" + value + "'");
  return static_cast<int>(v);
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// The median over windows of `window` consecutive calls of each window's mean per call; 1: the
// median of single calls. Where a loop's ranks fall out of step single calls alternate short
// and long at one rank (a 3-rank ring over 2 ms links: 0.6-6 ms calls, 4.3 ms apiece on
// average, their median 5.1-6.6), and a window's mean reads what the loop does.
inline double windowed_median(const std::vector<double>& v, size_t window) {
  if (window <= 1 || v.size() < window) return median(v);
  std::vector<double> means;
  for (size_t i = 0; i + window <= v.size(); i += window) {
    double sum = 0;
    for (size_t j = i; j < i + window; ++j) sum += v[j];
    means.push_back(sum / static_cast<double>(window));
  }
  return median(means);
}

struct Row {
  std::string collective;
  int nranks = 0;
  size_t bytes = 0;
  size_t count = 0;  // elements per rank
  std::string dtype;
  std::string op;  // "-" when not a reduction
  int root = -1;   // -1 when not rooted
  double time_us = 0;  // slowest rank's median
  int64_t wrong = 0;   // wrong elements summed over ranks
};

inline constexpr const char* kCsvHeader =
    "impl,collective,nranks,size_bytes,count,dtype,op,root,time_us,algbw_gbs,busbw_gbs,wrong";

// Prints the table head (or, with --csv, the column names once: pass first=false after that).
inline void print_header(const Options& o, int nranks, const char* impl_label, bool first = true) {
  if (o.csv) {
    if (o.csv_header && first) std::printf("%s\n", kCsvHeader);
  } else {
    std::printf("# %s  collective=%s  nranks=%d  iters=%d  warmup=%d\n", impl_label, o.collective.c_str(), nranks,
                o.iters, o.warmup);
    std::printf("# time: slowest rank's median per operation; algbw = size/time; busbw = algbw * %.3f\n",
                busbw_factor(o.collective, nranks));
    std::printf("#%13s %12s %6s %6s %5s %12s %11s %11s %7s\n", "size(B)", "count", "type", "redop", "root",
                "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
  }
  std::fflush(stdout);
}

inline double algbw_gbs(const Row& r) {
  double sec = r.time_us * 1e-6;
  return sec > 0 ? static_cast<double>(r.bytes) / sec / 1e9 : 0;
}

// One CSV row (no newline), `impl` in the first column.
inline std::string csv_row(const std::string& impl, const Row& r) {
  double algbw = algbw_gbs(r);
  std::string root = r.root < 0 ? "-" : std::to_string(r.root);
  char line[512];
  std::snprintf(line, sizeof line, "%s,%s,%d,%zu,%zu,%s,%s,%s,%.3f,%.4f,%.4f,%lld", impl.c_str(), r.collective.c_str(),
                r.nranks, r.bytes, r.count, r.dtype.c_str(), r.op.c_str(), root.c_str(), r.time_us, algbw,
                algbw * busbw_factor(r.collective, r.nranks), static_cast<long long>(r.wrong));
  return line;
}

inline void print_row(const Options& o, const Row& r) {
  if (o.csv) {
    std::printf("%s\n", csv_row(o.impl, r).c_str());
  } else {
    double algbw = algbw_gbs(r);
    std::string root = r.root < 0 ? "-" : std::to_string(r.root);
    std::printf(" %13zu %12zu %6s %6s %5s %12.2f %11.3f %11.3f %7lld\n", r.bytes, r.count, r.dtype.c_str(),
                r.op.c_str(), root.c_str(), r.time_us, algbw, algbw * busbw_factor(r.collective, r.nranks),
                static_cast<long long>(r.wrong));
  }
  std::fflush(stdout);
}

}  // namespace bench
