// One rank of a multi-process collectives test, started by spmdrun or by the driver test with
// RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT. Modes:
//   check       — a representative set of collectives against references; exits 0 when right
//   die-mid-op  — rank WORLD_SIZE-1 waits to be killed (SIGKILL by the driver) while
//                 the others run an all_reduce; they must report PeerLost naming it
//   stopped-root — two ranks broadcast 64 MiB from rank 1 until the driver stops rank 1
//                 (SIGSTOP) and rank 0 times out; rank 0 says whether the failed broadcast
//                 had partly written its buffer, then overwrites its buffer, waits
//                 until the driver has let rank 1 run on and seen it exit (the file
//                 SPMD_TEST_GO_FILE exists), and exits 0 only if its buffer still holds what
//                 it wrote: nothing of the failed call may land in it after it returned.
//                 (The root is rank 1 because rank 0 hosts the store the hang report uses.)
//   all-to-all  — all_to_all alone, even and uneven (some blocks empty), for groups too large
//                 for `check` on two cores
//   trials      — 72 calls each of all_reduce (64 KiB), all_gather (20 KiB blocks) and
//                 broadcast (100 KiB), every one checked: more than the one-host trials of
//                 each (up to 60 calls), which switch shared-memory algorithms between them
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "spmd/spmd.hpp"

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "rank check failed: %s\n", what.c_str());
  return 1;
}

int check(spmd::ProcessGroup& w) {
  const int p = w.size(), r = w.rank();
  for (size_t n : {size_t(1), size_t(1000), size_t(1 << 20) + 3}) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = float((r + 1) * static_cast<int>(i % 5));
    w.all_reduce(v);
    for (size_t i = 0; i < n; ++i)
      if (v[i] != float(p * (p + 1) / 2 * static_cast<int>(i % 5))) return fail("all_reduce n=" + std::to_string(n));
  }
  std::vector<int64_t> b(4099, r == p - 1 ? 7 : 0);
  w.broadcast(b, p - 1);
  for (auto x : b)
    if (x != 7) return fail("broadcast");
  std::vector<int32_t> in(5, r), out(5 * static_cast<size_t>(p));
  w.all_gather_into(out, in);
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i] != static_cast<int32_t>(i / 5)) return fail("all_gather");
  std::vector<double> rs_in(3 * static_cast<size_t>(p), 1.0), rs_out(3);
  w.reduce_scatter_from(rs_out, rs_in);
  for (double x : rs_out)
    if (x != p) return fail("reduce_scatter");
  std::vector<int32_t> a_in(static_cast<size_t>(p)), a_out(static_cast<size_t>(p));
  for (int i = 0; i < p; ++i) a_in[static_cast<size_t>(i)] = r * 100 + i;
  w.all_to_all(a_out, a_in);
  for (int i = 0; i < p; ++i)
    if (a_out[static_cast<size_t>(i)] != i * 100 + r) return fail("all_to_all");
  if (p > 1) {
    std::vector<uint8_t> token(16, static_cast<uint8_t>(r));
    int next = (r + 1) % p, prev = (r - 1 + p) % p;
    std::vector<uint8_t> got(16);
    auto works = w.batch_isend_irecv({{spmd::P2POp::Send, token, next, 3}, {spmd::P2POp::Recv, got, prev, 3}});
    for (auto& wk : works) wk.wait();
    if (got[0] != prev) return fail("batch_isend_irecv");
    // Large enough to go straight into the receiver's buffer between processes of one host.
    std::vector<float> big_out((1 << 18) + 3), big_in(big_out.size(), -1.0f);
    for (size_t i = 0; i < big_out.size(); ++i) big_out[i] = float(r * 100000 + static_cast<int>(i % 99991));
    for (auto& wk : w.batch_isend_irecv({{spmd::P2POp::Send, big_out, next, 4}, {spmd::P2POp::Recv, big_in, prev, 4}}))
      wk.wait();
    for (size_t i = 0; i < big_in.size(); ++i)
      if (big_in[i] != float(prev * 100000 + static_cast<int>(i % 99991))) return fail("large batch_isend_irecv");
  }
  spmd::Bytes obj(static_cast<size_t>(r) + 1, static_cast<uint8_t>('a' + r));
  auto objs = w.all_gather_object(obj);
  for (int i = 0; i < p; ++i)
    if (objs[static_cast<size_t>(i)].size() != static_cast<size_t>(i) + 1) return fail("all_gather_object");
  w.barrier();
  w.monitored_barrier(std::chrono::seconds(30));
  return 0;
}

// all_to_all alone (the `all-to-all` mode): each element says its source, destination and
// offset, so a block delivered to the wrong place cannot pass.
int all_to_all_only(spmd::ProcessGroup& w, size_t uneven_scale) {
  const int p = w.size(), r = w.rank();
  auto value = [p](int src, int dst, size_t k) { return static_cast<int32_t>((src * p + dst) * 50000 + static_cast<int>(k)); };
  for (size_t block : {size_t(1), size_t(40000)}) {
    std::vector<int32_t> in(block * static_cast<size_t>(p)), out(in.size());
    for (int j = 0; j < p; ++j)
      for (size_t k = 0; k < block; ++k) in[static_cast<size_t>(j) * block + k] = value(r, j, k);
    w.all_to_all(out, in);
    for (int j = 0; j < p; ++j)
      for (size_t k = 0; k < block; ++k)
        if (out[static_cast<size_t>(j) * block + k] != value(j, r, k))
          return fail("all_to_all of " + std::to_string(block) + " per block, from rank " + std::to_string(j));
  }
  // Uneven: rank i sends ((i + j) % 3 + j) x uneven_scale values to rank j (empty blocks among
  // them; with a scale of 100,000 a rank sends megabytes, more than one shared-memory slot).
  auto count = [&](int src, int dst) { return static_cast<size_t>((src + dst) % 3 + dst) * uneven_scale; };
  std::vector<size_t> in_splits, out_splits;
  std::vector<int32_t> in;
  for (int j = 0; j < p; ++j) {
    in_splits.push_back(count(r, j));
    out_splits.push_back(count(j, r));
    for (size_t k = 0; k < count(r, j); ++k) in.push_back(value(r, j, k));
  }
  size_t total = 0;
  for (size_t n : out_splits) total += n;
  std::vector<int32_t> out(total);
  w.all_to_all(out, in, out_splits, in_splits);
  size_t at = 0;
  for (int j = 0; j < p; ++j)
    for (size_t k = 0; k < out_splits[static_cast<size_t>(j)]; ++k, ++at)
      if (out[at] != value(j, r, k)) return fail("uneven all_to_all from rank " + std::to_string(j));
  return 0;
}

int die_mid_op(spmd::ProcessGroup& w) {
  std::vector<float> v(1 << 16, 1.0f);
  w.all_reduce(v);  // everyone connected and in step
  if (w.rank() == w.size() - 1) {
    std::printf("victim ready\n");
    std::fflush(stdout);
    pause();  // the driver kills this rank with SIGKILL
    return 0;
  }
  try {
    for (;;) w.all_reduce(v);
  } catch (const spmd::Error& e) {
    std::printf("caught %s: %s\n", spmd::error_kind_name(e.kind()), e.what());
    std::fflush(stdout);
    // PeerLost, naming the killed rank.
    bool names_it = std::string(e.what()).find("rank " + std::to_string(w.size() - 1)) != std::string::npos;
    return e.kind() == spmd::ErrorKind::PeerLost && names_it ? 0 : 3;
  }
}

int stopped_root(spmd::ProcessGroup& w) {
  const int root = 1;
  ::dup2(1, 2);  // spmd's warnings go where the driver reads (it looks for the copy-drain warning)
  std::vector<uint8_t> buf(size_t(64) << 20, 1);
  w.broadcast(buf, root);
  if (w.rank() == root) {
    std::printf("root ready\n");
  } else {  // where the driver watches the broadcasts land (it reads this process's memory)
    std::printf("buffer at %p, %zu bytes\n", static_cast<void*>(buf.data()), buf.size());
  }
  std::fflush(stdout);
  try {
    // Each broadcast carries another value (2, 3, 2, ...), so a buffer holding both is one
    // the stopped broadcast had partly written.
    for (uint8_t value = 2;; value = uint8_t(5 - value)) {
      if (w.rank() == root) std::fill(buf.begin(), buf.end(), value);
      w.broadcast(buf, root);
    }
  } catch (const spmd::Error& e) {
    std::printf("rank %d caught %s: %s\n", w.rank(), spmd::error_kind_name(e.kind()), e.what());
    std::fflush(stdout);
  }
  if (w.rank() == root) return 0;
  const bool partly = std::find(buf.begin(), buf.end(), buf.front() == 2 ? 3 : 2) != buf.end();
  std::fill(buf.begin(), buf.end(), uint8_t{0x5a});
  std::printf("rank %d left the call (buffer partly written: %s)\n", w.rank(), partly ? "yes" : "no");
  std::fflush(stdout);
  const char* go = std::getenv("SPMD_TEST_GO_FILE");
  for (int i = 0; go && i < 600 && ::access(go, F_OK) != 0; ++i) ::usleep(100000);
  for (size_t i = 0; i < buf.size(); ++i)
    if (buf[i] != 0x5a) return fail("byte " + std::to_string(i) + " of the buffer changed after the failed broadcast returned");
  return 0;
}

int trials(spmd::ProcessGroup& w) {
  const int p = w.size(), r = w.rank();
  for (int call = 0; call < 72; ++call) {
    std::vector<float> v((64 << 10) / 4 + 3);
    for (size_t i = 0; i < v.size(); ++i) v[i] = float((r + call) % 7 + static_cast<int>(i % 5));
    w.all_reduce(v);
    for (size_t i = 0; i < v.size(); ++i) {
      float want = 0;
      for (int q = 0; q < p; ++q) want += float((q + call) % 7 + static_cast<int>(i % 5));
      if (v[i] != want) return fail("all_reduce, call " + std::to_string(call) + ", element " + std::to_string(i));
    }
    std::vector<int32_t> block((20 << 10) / 4, r * 1000 + call), all(block.size() * static_cast<size_t>(p));
    w.all_gather_into(all, block);
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i] != static_cast<int32_t>(i / block.size()) * 1000 + call) return fail("all_gather, call " + std::to_string(call));
    std::vector<int64_t> b((100 << 10) / 8, r == 0 ? call : -1);
    w.broadcast(b, 0);
    for (int64_t x : b)
      if (x != call) return fail("broadcast, call " + std::to_string(call));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "check";
  try {
    spmd::InitOptions init;
    if (const char* method = std::getenv("SPMD_TEST_INIT_METHOD")) init.init_method = method;  // tcp://, file://
    spmd::ProcessGroup& w = spmd::init(init);
    if (!spmd::is_initialized() || &spmd::world() != &w) return fail("world() after init()");
    int rank = w.rank();
    int rc = mode == "die-mid-op"     ? die_mid_op(w)
             : mode == "stopped-root" ? stopped_root(w)
             : mode == "all-to-all"   ? all_to_all_only(w, 1)
             : mode == "all-to-all-large" ? all_to_all_only(w, 100000)
             : mode == "trials"           ? trials(w)
                                      : check(w);
    spmd::destroy();
    if (spmd::is_initialized()) return fail("still initialised after destroy()");
    if (rc == 0 && mode == "check") std::printf("rank %d ok\n", rank);
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
