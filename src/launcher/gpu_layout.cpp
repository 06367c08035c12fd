#include "launcher/gpu_layout.hpp"

#include <unistd.h>

#include <algorithm>

#include "spmd/error.hpp"

namespace spmd::launcher {

namespace {

[[noreturn]] void usage_error(const std::string& message) { raise(ErrorKind::InvalidArgument, message); }

std::string join(const std::vector<std::string>& items, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to && i < items.size(); ++i) out += (i > from ? "," : "") + items[i];
  return out;
}

int cpu_count() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);  // torchrun's os.cpu_count()
  return n > 0 ? static_cast<int>(n) : 1;
}

// "4 GPU(s) (CUDA_VISIBLE_DEVICES=5,6,7,8)", or "none (no CUDA device: <reason>)".
std::string what_node_has(int n, const std::optional<std::string>& visible, const std::string& reason) {
  std::string where = visible ? " with CUDA_VISIBLE_DEVICES=" + *visible : "";
  if (n == 0) return "none (no CUDA device" + where + ": " + reason + ")";
  return std::to_string(n) + " GPU(s)" + (visible ? " (CUDA_VISIBLE_DEVICES=" + *visible + ")" : "");
}

}  // namespace

std::vector<std::string> split_visible_devices(const std::string& value) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= value.size()) {
    size_t comma = std::min(value.find(',', pos), value.size());
    std::string item = value.substr(pos, comma - pos);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
    pos = comma + 1;
  }
  return out;
}

std::vector<std::string> node_gpu_list(const std::optional<std::string>& visible, int count) {
  std::vector<std::string> gpus;
  if (visible) {
    // The driver stops at the first entry it cannot use, so it counted a prefix of the list.
    gpus = split_visible_devices(*visible);
    gpus.resize(std::min(gpus.size(), static_cast<size_t>(std::max(count, 0))));
  } else {
    for (int i = 0; i < count; ++i) gpus.push_back(std::to_string(i));
  }
  return gpus;
}

void resolve_gpus(Options& o, const std::map<std::string, std::string>& env,
                  const std::function<GpuCount()>& count) {
  const bool from_gpus = o.nproc_spec == "gpu" || o.nproc_spec == "auto";
  const int k = o.gpus_per_proc;
  if (!from_gpus && k == 0) return;  // nothing asks for GPUs: the driver stays unloaded
  const GpuCount counted = count();
  std::optional<std::string> visible;
  if (auto it = env.find("CUDA_VISIBLE_DEVICES"); it != env.end()) visible = it->second;
  std::vector<std::string> gpus = node_gpu_list(visible, counted.count);
  const int n = static_cast<int>(gpus.size());
  const std::string has = what_node_has(n, visible, counted.reason);
  const std::string per_proc = " with --gpus-per-proc " + std::to_string(k);
  const std::string dry_run_hint =
      o.dry_run ? " (--dry-run counts this machine's GPUs; to see the layout of nodes that have them, "
                  "give their number of processes per node)"
                : "";

  if (from_gpus) {
    if (n == 0 && o.nproc_spec == "auto" && k == 0) {
      o.nproc_per_node = cpu_count();  // torchrun's auto without CUDA: one process per CPU core
      return;
    }
    if (n == 0 && k == 0)
      usage_error("--nproc-per-node gpu: Cuda is not available (no CUDA device" +
                  (visible ? " with CUDA_VISIBLE_DEVICES=" + *visible : std::string()) + ": " + counted.reason +
                  "); give a number of processes, or use auto" + dry_run_hint);
    if (n == 0)
      usage_error("--nproc-per-node " + o.nproc_spec + per_proc + ": this node has " + has +
                  "; run it on a node with GPUs, or give a number of processes without --gpus-per-proc" +
                  (o.nproc_spec == "auto" ? " (or drop --gpus-per-proc: auto is then one process per CPU core)" : "") +
                  dry_run_hint);
    if (n < k)
      usage_error("--nproc-per-node " + o.nproc_spec + per_proc + ": this node has " + has +
                  ", fewer than one process needs; use --gpus-per-proc " + std::to_string(n) + " or less");
    o.nproc_per_node = n / std::max(k, 1);
    o.nproc_from_gpus = true;
    o.node_gpus = std::move(gpus);
    return;
  }

  const int need = o.nproc_per_node * k;
  if (n < need) {
    if (o.dry_run) {
      // A dry run often happens where the job does not run (a login node): show the layout
      // of nodes with exactly the GPUs it needs.
      o.gpus_assumed = true;
      o.gpus_here = has;
      o.node_gpus = node_gpu_list(std::nullopt, need);
      return;
    }
    std::string fix;
    if (n >= k)
      fix = "run at most " + std::to_string(n / k) + " process(es) here (--nproc-per-node " + std::to_string(n / k) +
            ", or gpu: one process per " + std::to_string(k) + " GPUs), or give each process fewer GPUs";
    else if (n > 0)
      fix = "give each process at most " + std::to_string(n) + " GPU(s) (--gpus-per-proc " + std::to_string(n) + ")";
    else
      fix = "run it on a node with GPUs, or drop --gpus-per-proc";
    usage_error("--nproc-per-node " + std::to_string(o.nproc_per_node) + per_proc + " needs " + std::to_string(need) +
                " GPUs on this node (" + std::to_string(o.nproc_per_node) + " x " + std::to_string(k) +
                "), but it has " + has + "; " + fix);
  }
  o.node_gpus = std::move(gpus);
}

std::string worker_gpus(const Options& o, int local_rank) {
  if (o.gpus_per_proc == 0) return "";
  const size_t k = static_cast<size_t>(o.gpus_per_proc), first = static_cast<size_t>(local_rank) * k;
  return join(o.node_gpus, first, first + k);
}

std::string unused_gpus_note(const Options& o) {
  if (!o.nproc_from_gpus || o.gpus_per_proc == 0) return "";
  const size_t used = static_cast<size_t>(o.nproc_per_node) * static_cast<size_t>(o.gpus_per_proc);
  if (used >= o.node_gpus.size()) return "";
  return "--nproc-per-node " + o.nproc_spec + " with --gpus-per-proc " + std::to_string(o.gpus_per_proc) + " runs " +
         std::to_string(o.nproc_per_node) + " process(es) on this node's " + std::to_string(o.node_gpus.size()) +
         " GPUs; " + join(o.node_gpus, used, o.node_gpus.size()) + " stay(s) unused";
}

std::string dry_run_table(const Options& o, const RankTable& table) {
  const bool column = o.gpus_per_proc > 0 || o.nproc_from_gpus;
  if (!column) return table.format();
  std::string text = table.format([&o](const RankEntry& e) {
    if (o.gpus_per_proc > 0) return worker_gpus(o, e.local_rank);
    return o.node_gpus.at(static_cast<size_t>(e.local_rank));
  });
  const std::string total = std::to_string(o.node_gpus.size());
  if (o.gpus_per_proc > 0)
    text += "(gpus: each worker's CUDA_VISIBLE_DEVICES, " + std::to_string(o.gpus_per_proc) +
            " per process; other nodes split their own GPUs the same way)\n";
  else
    text += "(gpus: the device each worker takes by LOCAL_RANK; --nproc-per-node " + o.nproc_spec +
            " sets no CUDA_VISIBLE_DEVICES, as torchrun: every worker sees the node's " + total + " GPUs)\n";
  if (std::string note = unused_gpus_note(o); !note.empty()) text += "(" + note + ")\n";
  if (o.gpus_assumed)
    text += "(this machine's GPUs: " + o.gpus_here + "; shown for nodes with " + total + " GPUs numbered 0.." +
            std::to_string(o.node_gpus.size() - 1) + ")\n";
  return text;
}

}  // namespace spmd::launcher
