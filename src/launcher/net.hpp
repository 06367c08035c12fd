// Small network helpers for the launcher: free ports, host names, "host:port" endpoints.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace spmd::launcher {

// A port that is free right now on `bind_addr` (found by binding port 0). Another process may
// take it before the worker binds it; torchrun has the same window.
int pick_free_port(const std::string& bind_addr = "0.0.0.0");
// gethostname().
std::string host_name();
// Python's socket.getfqdn(socket.gethostname()): what torchrun puts in MASTER_ADDR when no
// --master-addr applies (standalone and c10d).
std::string fq_host_name();
// "host:port", "[::1]:port" → (host, port). A missing port raises InvalidArgument naming
// `flag`, unless default_port >= 0.
std::pair<std::string, int> parse_endpoint(const std::string& flag, const std::string& text,
                                           int default_port = -1);
// A random id like torch's uuid4 text (for --standalone's run id).
std::string random_uuid();

}  // namespace spmd::launcher

namespace spmd::launcher {
// True when `host` names this machine (loopback, its host name, or one of its addresses).
bool is_local_host(const std::string& host);
// True for 127.x.y.z, ::1 and "localhost".
bool is_loopback(const std::string& host);
}  // namespace spmd::launcher
