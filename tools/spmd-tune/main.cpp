// spmd-tune: measures which shared-memory algorithm of each collective is fastest on this
// machine, size by size and group size by group size, and writes the winners where every job
// on this machine reads them (collectives/tuned_table.hpp). Run alone, it starts itself under
// spmdrun once per group size; under a launcher it measures that one group size.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <string>
#include <vector>

#include <spmd/spmd.hpp>

#include "bench_common.hpp"
#include "check.hpp"
#include "collectives/select.hpp"
#include "collectives/tuned_table.hpp"
#include "measure.hpp"
#include "winners.hpp"

namespace {

const char* kUsage =
    "spmd-tune: measure which algorithm of each collective is fastest on this machine and keep\n"
    "the winners for every later job here (jobs on one host read them before the built-in table).\n"
    "\n"
    "Usage: spmd-tune [options]                 measures every group size of --nprocs in turn\n"
    "       spmdrun --nproc-per-node P spmd-tune [options]     measures group size P only\n"
    "Options:\n"
    "  --nprocs LIST        group sizes to measure (default 2,4,8 and on up to the CPU count)\n"
    "  --collectives LIST   default: every collective with two or more shared-memory algorithms\n"
    "  --sizes LIST         bytes each rank contributes (as selection counts them: all_gather,\n"
    "                       gather, scatter one block; reduce_scatter, all_to_all the whole input)\n"
    "                       default 64,256,1K,4K,16K,64K,256K,1M,4M,16M,64M\n"
    "  --reps N             rounds, every algorithm once per size in each (default 5; median)\n"
    "  --budget-ms MS       time one measurement aims at (default 20)\n"
    "  --out FILE           where to write (default: SPMD_TUNING, else\n"
    "                       $XDG_CACHE_HOME/spmd/tuning.conf or ~/.cache/spmd/tuning.conf)\n"
    "  --dry-run            measure and print, write nothing\n"
    "  --check              write nothing; measure the built-in default and the default reading\n"
    "                       the table (--out's, else the usual place) beside every algorithm in\n"
    "                       the same rounds, and count the cells (collective, size) where each\n"
    "                       is within 10 %% of the fastest (sizes default to 8,1K,...,16M,64M)\n"
    "Lines of other group sizes already in the file are kept; this machine's CPU count and\n"
    "model head the file, and jobs on a machine that differs ignore it. SPMD_TUNING=off makes\n"
    "jobs ignore it too. Run it on an idle machine: it takes about two minutes per group size.";

struct Options {
  std::string nprocs;
  std::vector<std::string> collectives;
  std::vector<size_t> sizes = {64,       256,       1 << 10, 4 << 10, 16 << 10, 64 << 10,
                               256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  int reps = 5;
  double budget_s = 0.02;
  std::string out;
  bool dry_run = false;
  bool check = false;
  bool sizes_given = false;
};

std::vector<int> group_sizes(const std::string& text);

Options parse(int argc, char** argv, bool* help) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      *help = true;
      return o;
    }
    if (flag == "--dry-run" || flag == "--check") {
      (flag == "--check" ? o.check : o.dry_run) = true;
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value (see --help)");
    std::string value = argv[++i];
    if (flag == "--nprocs") o.nprocs = value;
    else if (flag == "--collectives") o.collectives = bench::collective_list(value);
    else if (flag == "--sizes") o.sizes = bench::parse_size_list(value), o.sizes_given = true;
    else if (flag == "--reps") o.reps = bench::positive(flag, value);
    else if (flag == "--budget-ms") o.budget_s = bench::positive(flag, value) / 1000.0;
    else if (flag == "--out") o.out = value;
    else throw std::invalid_argument("unknown option " + flag + " (see --help)");
  }
  for (size_t i = 1; i < o.sizes.size(); ++i)
    if (o.sizes[i] <= o.sizes[i - 1]) throw std::invalid_argument("--sizes must grow");
  for (const std::string& c : o.collectives)
    if (spmd_tune::candidates(c).size() < 2)
      throw std::invalid_argument("--collectives: " + c + " has no two shared-memory algorithms to choose between");
  if (o.collectives.empty()) o.collectives = spmd_tune::tunable_collectives();
  group_sizes(o.nprocs);  // refused here, before anything runs
  if (o.check && !o.sizes_given)
    o.sizes = {8, 1 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  return o;
}

std::vector<int> group_sizes(const std::string& text) {
  std::vector<int> out;
  if (text.empty()) {
    long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    for (int p = 2; p <= 8 || p <= cpus; p *= 2) out.push_back(p);
    return out;
  }
  for (const std::string& p : bench::collective_list(text)) out.push_back(bench::positive("--nprocs", p));
  for (int p : out)
    if (p < 2) throw std::invalid_argument("--nprocs: a group of 1 has nothing to choose");
  return out;
}

std::string beside_me(const std::string& name) {
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) throw std::runtime_error("cannot find this program's folder (/proc/self/exe)");
  std::string path(self, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/') + 1) + name;
}

// Alone: once under spmdrun per group size, the same options passed on.
int drive(int argc, char** argv, const Options& o) {
  const std::string spmdrun = beside_me("spmdrun"), self = beside_me("spmd-tune");
  if (::access(spmdrun.c_str(), X_OK) != 0)
    throw std::runtime_error("spmdrun is not beside spmd-tune (" + spmdrun + "); run it as spmdrun --nproc-per-node P spmd-tune");
  for (int p : group_sizes(o.nprocs)) {
    std::fprintf(stderr, "spmd-tune: measuring groups of %d ranks\n", p);
    std::vector<std::string> args = {spmdrun, "--nproc-per-node", std::to_string(p), self};
    for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
    std::vector<char*> cargs;
    for (std::string& a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    pid_t child = ::fork();
    if (child < 0) throw std::runtime_error("fork failed");
    if (child == 0) {
      ::execv(cargs[0], cargs.data());
      std::perror("spmd-tune: exec spmdrun");
      ::_exit(127);
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "spmd-tune: the run with %d ranks failed (status %d); nothing more measured\n", p, status);
      return 1;
    }
  }
  return 0;
}

std::string utc_now() {
  char text[32];
  std::time_t now = std::time(nullptr);
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return text;
}

// --check: the algorithms and both defaults in the same rounds; the verdict per default.
int check_here(spmd::ProcessGroup& world, const Options& o, const std::string& path) {
  const bool tuned = !path.empty() && !spmd::algo::read_tuned_table(path).value_or(spmd::algo::TunedTable{}).lines.empty();
  std::vector<spmd_tune::Checked> checked;
  for (const std::string& c : o.collectives) {
    std::vector<std::string> rows = spmd_tune::candidates(c);
    rows.push_back(spmd_tune::kBuiltIn);
    if (tuned) rows.push_back(spmd_tune::kTuned);
    spmd_tune::Timings t = spmd_tune::measure(world, c, o.sizes, rows, path, o.reps, o.budget_s);
    if (world.rank() == 0) {
      std::vector<size_t> marks(t.sizes.size(), t.algorithms.size());  // none marked
      spmd_tune::print(stdout, c, world.size(), t, marks);
    }
    checked.push_back({c, t, spmd_tune::choices(c, o.sizes, t.algorithms, world.size()),
                       tuned ? spmd_tune::choices(c, o.sizes, t.algorithms, world.size(), path) : std::vector<size_t>{}});
  }
  const int rank = world.rank(), ranks = world.size();
  spmd::destroy();
  if (rank == 0) spmd_tune::print_check(stdout, ranks, checked);
  return 0;
}

// Under a launcher: measure this group size and (rank 0) write its lines.
int measure_here(const Options& o) {
  // The tables alone: the group's trials (collectives/trials.hpp) would time the shared-memory
  // algorithms on the default rows' first calls and serve both defaults with what they settled on.
  ::setenv("SPMD_TRIALS", "0", 1);
  spmd::ProcessGroup& world = spmd::init();
  const spmd::Topology topo = spmd::Topology::from_env();
  if (topo.local_world_size != world.size())
    throw std::invalid_argument("spmd-tune measures one host; run it on one node (no --nnodes)");
  const bool printer = world.rank() == 0;
  const std::string path = o.out.empty() ? spmd::algo::tuned_table_path() : o.out;
  if (o.check) return check_here(world, o, path);
  std::vector<spmd::algo::TunedLine> lines;
  for (const std::string& c : o.collectives) {
    const std::vector<std::string> rows = spmd_tune::candidates(c);
    spmd_tune::Timings t = spmd_tune::measure(world, c, o.sizes, rows, "", o.reps, o.budget_s);
    std::vector<size_t> won = spmd_tune::winners(t, spmd_tune::choices(c, o.sizes, rows, world.size()));
    if (printer) spmd_tune::print(stdout, c, world.size(), t, won);
    lines.push_back({world.size(), spmd_tune::collective_of(c), spmd_tune::ranges(t, won)});
  }
  spmd::destroy();
  if (!printer) return 0;
  for (const auto& l : lines) std::printf("%d %s %s\n", l.ranks, spmd::collective_name(l.collective), l.spec.c_str());
  if (o.dry_run) return 0;
  if (path.empty())
    throw std::invalid_argument("SPMD_TUNING=off and no --out: nowhere to write (results above)");
  // Keep the lines of other group sizes (or collectives not measured now) of this machine.
  spmd::algo::TunedTable table{spmd::algo::machine_key(), {}};
  if (auto old = spmd::algo::read_tuned_table(path); old && old->machine == table.machine)
    for (const auto& l : old->lines) {
      bool replaced = false;
      for (const auto& n : lines) replaced = replaced || (n.ranks == l.ranks && n.collective == l.collective);
      if (!replaced) table.lines.push_back(l);
    }
  table.lines.insert(table.lines.end(), lines.begin(), lines.end());
  spmd::algo::write_tuned_table(path, table,
                                "written by spmd-tune " + utc_now() + ": the fastest algorithm by size and group "
                                "size on this machine (medians of " + std::to_string(o.reps) + " rounds)");
  std::printf("spmd-tune: wrote %s\n", path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    bool help = false;
    o = parse(argc, argv, &help);
    if (help) {
      std::puts(kUsage);
      return 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spmd-tune: %s\n", e.what());
    return 2;
  }
  try {
    const bool launched = std::getenv("WORLD_SIZE") || std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE");
    return launched ? measure_here(o) : drive(argc, argv, o);
  } catch (const spmd::Error& e) {
    std::fprintf(stderr, "spmd-tune: %s error: %s\n", spmd::error_kind_name(e.kind()), e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spmd-tune: %s\n", e.what());
  }
  return 1;
}
