// The fake CUDA runtime + NCCL (fake_cuda.hpp).
#include "fake_cuda.hpp"

#include <cstdlib>
#include <cstring>

#include "call/reduce_kernels.hpp"

namespace spmd::test {

namespace {
thread_local int t_device = 0;  // CUDA's current device is per thread
constexpr int kAbortedCode = 3;  // ncclInternalError: what a call on an aborted communicator gives
constexpr int kInvalidUsage = 5;  // ncclInvalidUsage: what NCCL answers two ranks on one GPU
}  // namespace

struct FakeCuda::Stream {
  Stream() : worker([this] { loop(); }) {}
  ~Stream() { stop(); }
  void push(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> g(m);
      tasks.push_back(std::move(task));
    }
    cv.notify_all();
  }
  void drain() {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return tasks.empty() && !running; });
  }
  void stop() {
    {
      std::lock_guard<std::mutex> g(m);
      if (stopped) return;
      stopped = true;
    }
    cv.notify_all();
    worker.join();
  }
  void loop() {
    std::unique_lock<std::mutex> lock(m);
    for (;;) {
      cv.wait(lock, [&] { return stopped || !tasks.empty(); });
      if (tasks.empty()) return;
      auto task = std::move(tasks.front());
      tasks.pop_front();
      running = true;
      lock.unlock();
      task();
      lock.lock();
      running = false;
      cv.notify_all();
    }
  }
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::function<void()>> tasks;
  bool running = false, stopped = false;
  std::thread worker;  // last: starts once the rest exists
};

struct FakeCuda::Event {
  uint64_t recorded = 0, completed = 0;
};

struct FakeCuda::Meeting {
  struct Round {
    std::vector<const void*> in;
    int arrived = 0, computed = 0, left = 0;
  };
  int n = 0, joined = 0;
  std::vector<int> devices;  // of the ranks joined so far (one host: every rank is a thread here)
  bool duplicate = false;    // two ranks on one device: NCCL refuses ("Duplicate GPU detected")
  std::map<uint64_t, Round> rounds;
  std::map<std::pair<int, int>, std::deque<std::vector<char>>> mail;  // (from, to)
};

struct FakeCuda::Comm {
  std::shared_ptr<Meeting> meeting;
  int rank = 0, n = 0;
  bool aborted = false;
  uint64_t ops = 0;
};

namespace {
// Events and streams stay alive until the fake goes (queued tasks may still use them).
std::mutex g_objects_mutex;
std::vector<std::unique_ptr<FakeCuda::Event>>& events() {
  static std::vector<std::unique_ptr<FakeCuda::Event>> v;
  return v;
}
std::vector<std::unique_ptr<FakeCuda::Stream>>& streams() {
  static std::vector<std::unique_ptr<FakeCuda::Stream>> v;
  return v;
}
std::vector<std::unique_ptr<FakeCuda::Comm>>& comms() {
  static std::vector<std::unique_ptr<FakeCuda::Comm>> v;
  return v;
}
}  // namespace

FakeCuda::FakeCuda(int devices) : devices_(devices) {
  for (int d = 0; d < devices; ++d) default_streams_.push_back(std::make_unique<Stream>());
}

FakeCuda::~FakeCuda() {
  {
    std::lock_guard<std::mutex> g(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& s : default_streams_) s->stop();
  std::lock_guard<std::mutex> g(g_objects_mutex);
  for (auto& s : streams()) s->stop();
  streams().clear();
  events().clear();
  comms().clear();
}

void FakeCuda::hold(bool on) {
  {
    std::lock_guard<std::mutex> g(m_);
    held_ = on;
  }
  cv_.notify_all();
}

void FakeCuda::set_async_error(int code) {
  std::lock_guard<std::mutex> g(m_);
  async_error_ = code;
}

void FakeCuda::drain_default_stream(int d) { default_streams_[static_cast<size_t>(d)]->drain(); }

bool FakeCuda::wait_aborted(int n, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(m_);
  return cv_.wait_for(lock, timeout, [&] { return aborted_.load() >= n; });
}

bool FakeCuda::blocked(const Comm& c) const { return c.aborted || stopping_; }

FakeCuda::Stream& FakeCuda::stream(nccl::Stream s) {
  return s ? *static_cast<Stream*>(s) : *default_streams_[static_cast<size_t>(t_device)];
}

void FakeCuda::enqueue(nccl::Stream s, std::function<void()> task) { stream(s).push(std::move(task)); }

int FakeCuda::device_count(int* count) {
  ++calls_;
  *count = devices_;
  return nccl::kOk;
}
int FakeCuda::get_device(int* device) {
  ++calls_;
  *device = t_device;
  return nccl::kOk;
}
int FakeCuda::set_device(int device) {
  ++calls_;
  if (device < 0 || device >= devices_) return 101;  // cudaErrorInvalidDevice
  t_device = device;
  return nccl::kOk;
}
int FakeCuda::stream_create(nccl::Stream* s) {
  std::lock_guard<std::mutex> g(g_objects_mutex);
  streams().push_back(std::make_unique<Stream>());
  *s = streams().back().get();
  return nccl::kOk;
}
int FakeCuda::stream_destroy(nccl::Stream s) {
  static_cast<Stream*>(s)->stop();
  return nccl::kOk;
}
int FakeCuda::event_create(nccl::Event* e) {
  std::lock_guard<std::mutex> g(g_objects_mutex);
  events().push_back(std::make_unique<Event>());
  *e = events().back().get();
  return nccl::kOk;
}
int FakeCuda::event_destroy(nccl::Event) { return nccl::kOk; }
int FakeCuda::event_record(nccl::Event e, nccl::Stream s) {
  auto* ev = static_cast<Event*>(e);
  uint64_t gen;
  {
    std::lock_guard<std::mutex> g(m_);
    gen = ++ev->recorded;
  }
  enqueue(s, [this, ev, gen] {
    {
      std::lock_guard<std::mutex> g(m_);
      ev->completed = std::max(ev->completed, gen);
    }
    cv_.notify_all();
  });
  return nccl::kOk;
}
int FakeCuda::event_query(nccl::Event e) {
  auto* ev = static_cast<Event*>(e);
  std::lock_guard<std::mutex> g(m_);
  return ev->completed >= ev->recorded ? nccl::kOk : nccl::kPending;
}
int FakeCuda::stream_wait_event(nccl::Stream s, nccl::Event e) {
  auto* ev = static_cast<Event*>(e);
  uint64_t gen;
  {
    std::lock_guard<std::mutex> g(m_);
    gen = ev->recorded;
  }
  if (!s) ++default_waits_;
  enqueue(s, [this, ev, gen] {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return ev->completed >= gen || stopping_; });
  });
  return nccl::kOk;
}
int FakeCuda::malloc_async(void** p, size_t bytes, nccl::Stream) {
  *p = std::malloc(bytes ? bytes : 1);
  return *p ? nccl::kOk : 2;  // cudaErrorMemoryAllocation
}
int FakeCuda::free_async(void* p, nccl::Stream s) {
  enqueue(s, [p] { std::free(p); });
  return nccl::kOk;
}
int FakeCuda::memcpy_async(void* dst, const void* src, size_t bytes, nccl::Stream s) {
  enqueue(s, [dst, src, bytes] {
    if (bytes) std::memmove(dst, src, bytes);
  });
  return nccl::kOk;
}

int FakeCuda::memset_async(void* p, int value, size_t bytes, nccl::Stream s) {
  enqueue(s, [p, value, bytes] { std::memset(p, value, bytes); });
  return nccl::kOk;
}

int FakeCuda::get_unique_id(nccl::UniqueId* id) {
  std::lock_guard<std::mutex> g(m_);
  std::memset(id->bytes, 0, sizeof id->bytes);
  uint64_t v = next_id_++;
  std::memcpy(id->bytes, &v, sizeof v);
  return nccl::kOk;
}
int FakeCuda::comm_init(nccl::Comm* comm, int ranks, const nccl::UniqueId& id, int rank) {
  uint64_t key;
  std::memcpy(&key, id.bytes, sizeof key);
  auto c = std::make_unique<Comm>();
  {
    std::lock_guard<std::mutex> g(m_);
    auto& meeting = meetings_[key];
    if (!meeting) {
      meeting = std::make_shared<Meeting>();
      meeting->n = ranks;
    }
    ++meeting->joined;
    for (int d : meeting->devices)
      if (d == t_device) meeting->duplicate = true;
    meeting->devices.push_back(t_device);
    c->meeting = meeting;
  }
  ++calls_;
  c->rank = rank;
  c->n = ranks;
  ++comms_made_;
  std::lock_guard<std::mutex> g(g_objects_mutex);
  comms().push_back(std::move(c));
  *comm = comms().back().get();
  return nccl::kPending;  // non-blocking: ready once every rank joined (comm_state)
}
int FakeCuda::comm_state(nccl::Comm comm) {
  auto* c = static_cast<Comm*>(comm);
  std::lock_guard<std::mutex> g(m_);
  if (c->aborted) return kAbortedCode;
  if (async_error_) return async_error_;
  if (c->meeting->joined < c->n) return nccl::kPending;
  return c->meeting->duplicate ? kInvalidUsage : nccl::kOk;
}
int FakeCuda::comm_abort(nccl::Comm comm) {
  {
    std::lock_guard<std::mutex> g(m_);
    static_cast<Comm*>(comm)->aborted = true;
  }
  ++aborted_;
  cv_.notify_all();
  return nccl::kOk;
}
int FakeCuda::comm_finalize(nccl::Comm) { return nccl::kOk; }
int FakeCuda::comm_destroy(nccl::Comm) { return nccl::kOk; }

void FakeCuda::meet(Comm& c, const void* in, void* out, size_t out_bytes,
                    const std::function<void(const std::vector<const void*>&, std::vector<char>&)>& compute) {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait(lock, [&] { return !held_ || blocked(c); });
  const uint64_t k = c.ops++;
  Meeting::Round& r = c.meeting->rounds[k];
  if (r.in.empty()) r.in.resize(static_cast<size_t>(c.n));
  r.in[static_cast<size_t>(c.rank)] = in;
  ++r.arrived;
  cv_.notify_all();
  cv_.wait(lock, [&] { return r.arrived == c.n || blocked(c); });
  if (blocked(c)) return;
  std::vector<char> result;
  lock.unlock();
  compute(r.in, result);
  lock.lock();
  ++r.computed;
  cv_.notify_all();
  cv_.wait(lock, [&] { return r.computed == c.n || blocked(c); });
  if (blocked(c)) return;
  if (out && out_bytes) std::memcpy(out, result.data(), out_bytes);  // after every rank read the inputs
  if (++r.left == c.n) c.meeting->rounds.erase(k);
}

namespace {
// result = fold over ranks, in rank order, of `count` elements at each input + offset.
void fold(const std::vector<const void*>& ins, size_t offset, size_t count, DType t, ReduceOp op,
          std::vector<char>& result) {
  const size_t bytes = count * dtype_size(t);
  result.assign(static_cast<const char*>(ins[0]) + offset, static_cast<const char*>(ins[0]) + offset + bytes);
  ReduceFn fn = reduce_kernel(t, op);
  for (size_t r = 1; r < ins.size(); ++r) fn(result.data(), result.data(), static_cast<const char*>(ins[r]) + offset, count);
  if (op == ReduceOp::Avg) divide_by(TensorView(result.data(), count, t), static_cast<int>(ins.size()));
}
}  // namespace

int FakeCuda::all_reduce(const void* in, void* out, size_t count, DType t, ReduceOp op, nccl::Comm comm,
                         nccl::Stream s) {
  auto* c = static_cast<Comm*>(comm);
  enqueue(s, [=, this] {
    meet(*c, in, out, count * dtype_size(t), [&](const auto& ins, auto& res) { fold(ins, 0, count, t, op, res); });
  });
  return nccl::kOk;
}
int FakeCuda::broadcast(const void* in, void* out, size_t count, DType t, int root, nccl::Comm comm, nccl::Stream s) {
  auto* c = static_cast<Comm*>(comm);
  const size_t bytes = count * dtype_size(t);
  enqueue(s, [=, this] {
    meet(*c, in, out, bytes, [&](const auto& ins, auto& res) {
      const char* from = static_cast<const char*>(ins[static_cast<size_t>(root)]);
      res.assign(from, from + bytes);
    });
  });
  return nccl::kOk;
}
int FakeCuda::reduce(const void* in, void* out, size_t count, DType t, ReduceOp op, int root, nccl::Comm comm,
                     nccl::Stream s) {
  auto* c = static_cast<Comm*>(comm);
  void* target = c->rank == root ? out : nullptr;
  enqueue(s, [=, this] {
    meet(*c, in, target, count * dtype_size(t), [&](const auto& ins, auto& res) { fold(ins, 0, count, t, op, res); });
  });
  return nccl::kOk;
}
int FakeCuda::all_gather(const void* in, void* out, size_t count, DType t, nccl::Comm comm, nccl::Stream s) {
  auto* c = static_cast<Comm*>(comm);
  const size_t bytes = count * dtype_size(t);
  enqueue(s, [=, this] {
    meet(*c, in, out, bytes * static_cast<size_t>(c->n), [&](const auto& ins, auto& res) {
      for (const void* p : ins) res.insert(res.end(), static_cast<const char*>(p), static_cast<const char*>(p) + bytes);
    });
  });
  return nccl::kOk;
}
int FakeCuda::reduce_scatter(const void* in, void* out, size_t count, DType t, ReduceOp op, nccl::Comm comm,
                             nccl::Stream s) {
  auto* c = static_cast<Comm*>(comm);
  enqueue(s, [=, this] {
    meet(*c, in, out, count * dtype_size(t), [&](const auto& ins, auto& res) {
      fold(ins, static_cast<size_t>(c->rank) * count * dtype_size(t), count, t, op, res);
    });
  });
  return nccl::kOk;
}
int FakeCuda::send(const void* data, size_t count, DType t, int peer, nccl::Comm comm, nccl::Stream s) {
  auto* c = static_cast<Comm*>(comm);
  const size_t bytes = count * dtype_size(t);
  enqueue(s, [=, this] {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return !held_ || blocked(*c); });
    if (blocked(*c)) return;
    const char* p = static_cast<const char*>(data);
    c->meeting->mail[{c->rank, peer}].emplace_back(p, p + bytes);  // eager: sends never wait
    cv_.notify_all();
  });
  return nccl::kOk;
}
int FakeCuda::recv(void* data, size_t count, DType t, int peer, nccl::Comm comm, nccl::Stream s) {
  auto* c = static_cast<Comm*>(comm);
  const size_t bytes = count * dtype_size(t);
  enqueue(s, [=, this] {
    std::unique_lock<std::mutex> lock(m_);
    auto& box = c->meeting->mail[{peer, c->rank}];
    cv_.wait(lock, [&] { return (!held_ && !box.empty()) || blocked(*c); });
    if (blocked(*c)) return;
    std::vector<char> msg = std::move(box.front());
    box.pop_front();
    std::memcpy(data, msg.data(), std::min(bytes, msg.size()));
  });
  return nccl::kOk;
}

int FakeCuda::device_identity(int device, std::string* id) {
  ++calls_;
  if (device < 0 || device >= devices_) return 101;  // cudaErrorInvalidDevice
  *id = "fake-gpu-" + std::to_string(device);
  return nccl::kOk;
}
std::string FakeCuda::error_text(nccl::Library lib, int code) {
  return std::string(lib == nccl::Library::Cuda ? "fake CUDA error " : "fake NCCL error ") + std::to_string(code);
}
ErrorKind FakeCuda::error_kind(nccl::Library lib, int code) {
  if (lib == nccl::Library::Nccl && code == 6) return ErrorKind::PeerLost;  // ncclRemoteError
  if (lib == nccl::Library::Nccl && (code == 4 || code == 5)) return ErrorKind::InvalidArgument;
  return ErrorKind::System;
}

}  // namespace spmd::test
