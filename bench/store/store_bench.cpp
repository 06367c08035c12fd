// Store benchmark: spmd's TcpStoreServer + spmd's C++ TcpStore client, N client processes.
// Usage: store_bench --clients N [--ops M] [--rounds R]     (see bench_driver.hpp, run.sh)
#include "bench_driver.hpp"
#include "spmd/store.hpp"

namespace {

class SpmdClient : public bench::Client {
 public:
  explicit SpmdClient(uint16_t port) : store_(options(port)) {}
  void set(const std::string& k, const std::vector<uint8_t>& v) override { store_.set(k, v); }
  std::vector<uint8_t> get(const std::string& k) override { return store_.get(k); }
  int64_t add(const std::string& k, int64_t d) override { return store_.add(k, d); }
  void wait(const std::string& k) override { store_.wait({k}); }

 private:
  static spmd::TcpStoreOptions options(uint16_t port) {
    spmd::TcpStoreOptions o;
    o.port = port;
    o.timeout = std::chrono::seconds(120);
    return o;
  }
  spmd::TcpStore store_;
};

}  // namespace

int main(int argc, char** argv) {
  spmd::TcpStoreServer server;  // 127.0.0.1, a free port
  uint16_t port = server.port();
  return bench::run([port] { return std::make_unique<SpmdClient>(port); },
                    bench::parse_args(argc, argv, "spmd"));
}
