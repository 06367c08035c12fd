#include "call/call.hpp"

#include <atomic>

namespace spmd {

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::AllReduce: return "all_reduce";
    case Collective::Broadcast: return "broadcast";
    case Collective::Reduce: return "reduce";
    case Collective::AllGather: return "all_gather";
    case Collective::Gather: return "gather";
    case Collective::Scatter: return "scatter";
    case Collective::ReduceScatter: return "reduce_scatter";
    case Collective::AllToAll: return "all_to_all";
    case Collective::Barrier: return "barrier";
    case Collective::Send: return "send";
    case Collective::Recv: return "recv";
  }
  return "unknown_call";
}

std::string describe(const CallSignature& s) {
  std::string out = collective_name(s.collective);
  if (s.collective == Collective::Barrier) {
    out += "()";
  } else {
    out += "(";
    out += dtype_name(s.dtype);
    out += ", " + std::to_string(s.count);
    switch (s.collective) {
      case Collective::AllReduce:
      case Collective::ReduceScatter:
        out += std::string(", ") + reduce_op_name(s.op);
        break;
      case Collective::Reduce:
        out += std::string(", ") + reduce_op_name(s.op) + ", root " + std::to_string(s.root);
        break;
      case Collective::Broadcast:
      case Collective::Gather:
      case Collective::Scatter:
        out += ", root " + std::to_string(s.root);
        break;
      case Collective::Send:
      case Collective::Recv:
        out += ", tag " + std::to_string(s.root);
        break;
      default:
        break;
    }
    out += ")";
  }
  if (s.algo != 0) out += std::string(" via ") + algorithm_name(s.algo);
  return out;
}

namespace {
std::atomic<const char* (*)(uint16_t)> g_algorithm_names{nullptr};
}  // namespace

const char* algorithm_name(uint16_t algo) {
  const auto name_of = g_algorithm_names.load(std::memory_order_acquire);
  return name_of ? name_of(algo) : "";
}

void set_algorithm_names(const char* (*name_of)(uint16_t algo)) {
  g_algorithm_names.store(name_of, std::memory_order_release);
}

uint32_t hash_name(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

}  // namespace spmd
