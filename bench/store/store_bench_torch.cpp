// Store benchmark: PyTorch's c10d::TCPStore server + its C++ client (LibTorch 1.13), N client
// processes, same phases as store_bench (bench_driver.hpp). The fair peer: C++ on both sides.
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "bench_driver.hpp"

namespace {

c10d::TCPStoreOptions options(uint16_t port, bool server) {
  c10d::TCPStoreOptions o;
  o.port = port;
  o.isServer = server;
  o.waitWorkers = false;
  o.timeout = std::chrono::seconds(120);
  return o;
}

class TorchClient : public bench::Client {
 public:
  explicit TorchClient(uint16_t port) : store_("127.0.0.1", options(port, false)) {}
  void set(const std::string& k, const std::vector<uint8_t>& v) override { store_.set(k, v); }
  std::vector<uint8_t> get(const std::string& k) override { return store_.get(k); }
  int64_t add(const std::string& k, int64_t d) override { return store_.add(k, d); }
  void wait(const std::string& k) override { store_.wait({k}); }

 private:
  c10d::TCPStore store_;
};

}  // namespace

int main(int argc, char** argv) {
  c10d::TCPStore server("127.0.0.1", options(0, true));  // port 0: a free port
  uint16_t port = server.getPort();
  return bench::run([port] { return std::make_unique<TorchClient>(port); },
                    bench::parse_args(argc, argv, "torch-cpp"));
}
