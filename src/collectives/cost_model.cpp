// SPMD_NET: parsing the link classes, describing them, and the model in force.
#include "collectives/cost_model.hpp"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

#include "common/byte_size.hpp"
#include "common/env.hpp"
#include "spmd/error.hpp"

namespace spmd::algo {

namespace {

[[noreturn]] void bad(std::string_view where, std::string_view item, const std::string& why) {
  raise(ErrorKind::InvalidArgument,
        std::string(where) + ": '" + std::string(item) + "' " + why +
            " (the form is net=RATE@LATENCY[,host=RATE@LATENCY][,shm=RATE@LATENCY][,msg=TIME]"
            "[,cores=N@TIME[@RATE]][,fabric=RATE], e.g. net=1Gbit@200us or net=25Gbit@10us,host=8GB@2us,shm=10GB@1us,msg=1us)");
}

// "12.5" then the rest: the number and the unit after it, lower-cased.
bool split_number(std::string_view text, double& value, std::string& unit) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return false;
  try {
    size_t used = 0;
    value = std::stod(std::string(text.substr(0, i)), &used);
    if (used != i) return false;
  } catch (...) {
    return false;
  }
  unit.clear();
  for (char c : text.substr(i)) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return value > 0;
}

double parse_rate(std::string_view where, std::string_view item, std::string_view text) {
  double v = 0;
  std::string unit;
  if (!split_number(text, v, unit)) bad(where, item, "has a rate that is not a positive number");
  if (unit.size() > 2 && unit.compare(unit.size() - 2, 2, "/s") == 0) unit.resize(unit.size() - 2);
  struct Unit {
    const char* name;
    double bytes_per_s;
  };
  static const Unit kUnits[] = {{"gbit", 1e9 / 8}, {"mbit", 1e6 / 8}, {"kbit", 1e3 / 8}, {"bit", 1.0 / 8},
                                {"gb", 1e9},       {"mb", 1e6},       {"kb", 1e3},       {"b", 1}};
  for (const Unit& u : kUnits)
    if (unit == u.name) return v * u.bytes_per_s;
  bad(where, item, "has a rate without a unit (Gbit, Mbit, Kbit, GB, MB or KB)");
}

double parse_latency(std::string_view where, std::string_view item, std::string_view text) {
  double v = 0;
  std::string unit;
  if (!split_number(text, v, unit) && text != "0") bad(where, item, "has a latency that is not a number");
  if (text == "0") return 0;
  if (unit == "s") return v;
  if (unit == "ms") return v * 1e-3;
  if (unit == "us") return v * 1e-6;
  if (unit == "ns") return v * 1e-9;
  bad(where, item, "has a latency without a unit (s, ms, us or ns)");
}

// cores=N@TIME's N: a whole number of cores, 1 to 2^20.
int parse_cores(std::string_view where, std::string_view item, std::string_view text) {
  double v = 0;
  std::string unit;
  if (!split_number(text, v, unit) || !unit.empty() || v != static_cast<int>(v) || v > (1 << 20))
    bad(where, item, "has a core count that is not a whole number from 1");
  return static_cast<int>(v);
}

std::string rate_text(double bytes_per_s) {
  char buf[64];
  double bits = bytes_per_s * 8;
  if (bits >= 1e9)
    std::snprintf(buf, sizeof buf, "%g Gbit/s", bits / 1e9);
  else
    std::snprintf(buf, sizeof buf, "%g Mbit/s", bits / 1e6);
  return buf;
}

std::string latency_text(double s) {
  char buf[64];
  if (s >= 1e-3)
    std::snprintf(buf, sizeof buf, "%g ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%g us", s * 1e6);
  return buf;
}

std::mutex g_mutex;
std::atomic<const NetModel*> g_model{nullptr};
std::vector<std::unique_ptr<NetModel>> g_models;  // kept: a caller may hold a reference

}  // namespace

std::string NetModel::describe() const {
  return "net " + rate_text(net.bytes_per_s) + " " + latency_text(net.latency_s) + ", host " +
         rate_text(host.bytes_per_s) + " " + latency_text(host.latency_s) + ", shm " + rate_text(shm.bytes_per_s) +
         " " + latency_text(shm.latency_s) + ", " + latency_text(per_message_s) + " per message" +
         (shared_cores.count ? ", every rank on " + std::to_string(shared_cores.count) + " shared cores at " +
                                   latency_text(shared_cores.per_message_s) + " per message" +
                                   (shared_cores.copy_bytes_per_s > 0
                                        ? ", each copying " + rate_text(shared_cores.copy_bytes_per_s)
                                        : "")
                             : "") +
         (fabric_bytes_per_s > 0 ? ", every flow between hosts through " + rate_text(fabric_bytes_per_s) + " in all" : "") +
         (window_bytes > 0 ? ", flows between hosts of up to " + std::to_string(static_cast<uint64_t>(window_bytes)) +
                                 " B in one latency"
                           : "") +
         " (" + origin + ")";
}

NetModel parse_net_model(std::string_view text, std::string_view where) {
  NetModel m;
  m.origin = std::string(where) + "=" + std::string(text);
  bool any = false;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    start = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    if (item.empty()) continue;
    size_t eq = item.find('='), at = item.find('@');
    if (eq != std::string_view::npos && item.substr(0, eq) == "msg") {
      m.per_message_s = parse_latency(where, item, item.substr(eq + 1));
      any = true;
      continue;
    }
    if (eq != std::string_view::npos && item.substr(0, eq) == "fabric") {
      m.fabric_bytes_per_s = parse_rate(where, item, item.substr(eq + 1));
      any = true;
      continue;
    }
    if (eq != std::string_view::npos && item.substr(0, eq) == "window") {
      std::string why;
      auto bytes = try_parse_byte_size(item.substr(eq + 1), &why);
      if (!bytes) bad(where, item, "is not window=BYTES (" + why + "; e.g. window=512K)");
      m.window_bytes = static_cast<double>(*bytes);
      any = true;
      continue;
    }
    if (eq == std::string_view::npos || at == std::string_view::npos || at < eq)
      bad(where, item, "is not CLASS=RATE@LATENCY");
    if (item.substr(0, eq) == "cores") {  // cores=N@TIME[@RATE]
      const size_t copy_at = item.find('@', at + 1);
      const std::string_view time = item.substr(at + 1, copy_at == std::string_view::npos ? std::string_view::npos : copy_at - at - 1);
      m.shared_cores = {parse_cores(where, item, item.substr(eq + 1, at - eq - 1)), parse_latency(where, item, time),
                        copy_at == std::string_view::npos ? 0.0 : parse_rate(where, item, item.substr(copy_at + 1))};
      any = true;
      continue;
    }
    std::string_view cls = item.substr(0, eq);
    LinkClass link{parse_latency(where, item, item.substr(at + 1)), parse_rate(where, item, item.substr(eq + 1, at - eq - 1))};
    if (cls == "net")
      m.net = link;
    else if (cls == "host")
      m.host = link;
    else if (cls == "shm")
      m.shm = link;
    else
      bad(where, item, "names no link class (net, host or shm)");
    any = true;
  }
  if (!any) bad(where, text, "describes no link");
  return m;
}

const NetModel& net_model() {
  if (const NetModel* m = g_model.load(std::memory_order_acquire)) return *m;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_model.load(std::memory_order_relaxed)) {
    auto text = env::get("SPMD_NET");
    g_models.push_back(std::make_unique<NetModel>(text ? parse_net_model(*text) : NetModel{}));
    g_model.store(g_models.back().get(), std::memory_order_release);
  }
  return *g_model.load(std::memory_order_relaxed);
}

void set_net_model_override(const std::string& text) {
  auto fresh = std::make_unique<NetModel>(text.empty() ? NetModel{} : parse_net_model(text));
  if (text.empty())
    if (auto env_text = env::get("SPMD_NET")) *fresh = parse_net_model(*env_text);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_models.push_back(std::move(fresh));
  g_model.store(g_models.back().get(), std::memory_order_release);
}

}  // namespace spmd::algo
