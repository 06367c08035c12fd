// The TCP transport on its own: framed full-duplex steps between thread ranks over real
// sockets (TCP loopback and local Unix sockets), peer loss, deadlines, mismatched frames.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <future>
#include <numeric>
#include <thread>

#include "spmd/store.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace spmd {
namespace {

using namespace std::chrono_literals;
using tcp::TcpTransport;

OpContext op_of(Collective c, uint64_t count, std::chrono::milliseconds timeout = 10s, uint64_t seq = 0) {
  OpContext op;
  op.sig = CallSignature{c, DType::U8, ReduceOp::Sum, -1, count};
  op.seq = seq;
  op.deadline = Deadline(timeout);
  op.timeout = timeout;
  return op;
}

// Runs body(transport) for `world` thread ranks; failures are reported per rank.
void run_transports(int world, const std::function<void(TcpTransport&)>& body) {
  auto store = std::make_shared<HashStore>();
  std::vector<int> globals(static_cast<size_t>(world));
  std::iota(globals.begin(), globals.end(), 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        TcpTransport t(store, "test", r, globals);
        body(t);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << r << ": " << e.what();
      }
    });
  for (auto& t : threads) t.join();
}

class Transport : public ::testing::TestWithParam<bool> {  // param: local sockets allowed
 protected:
  void SetUp() override { ::setenv("SPMD_LOCAL_SOCKETS", GetParam() ? "1" : "0", 1); }
  void TearDown() override { ::unsetenv("SPMD_LOCAL_SOCKETS"); }
};

TEST_P(Transport, SmallExchangeBothWays) {
  run_transports(2, [](TcpTransport& t) {
    int peer = 1 - t.rank();
    for (uint64_t seq = 0; seq < 100; ++seq) {
      uint64_t mine = seq * 10 + static_cast<uint64_t>(t.rank()), theirs = 0;
      send_recv(t, op_of(Collective::AllReduce, 8, 10s, seq), peer, &mine, 8, peer, &theirs, 8);
      EXPECT_EQ(theirs, seq * 10 + static_cast<uint64_t>(peer));
    }
  });
}

TEST_P(Transport, LargeFullDuplexExchangeDoesNotDeadlock) {
  // 32 MiB each way at once: far more than the socket buffers, so both sides must send and
  // receive at the same time.
  const size_t n = 32u << 20;
  run_transports(2, [&](TcpTransport& t) {
    std::vector<uint8_t> out(n, static_cast<uint8_t>(t.rank() + 1)), in(n);
    send_recv(t, op_of(Collective::AllReduce, n), 1 - t.rank(), out.data(), n, 1 - t.rank(), in.data(), n);
    EXPECT_EQ(in.front(), 2 - t.rank());
    EXPECT_EQ(in.back(), 2 - t.rank());
  });
}

TEST_P(Transport, SinkSeesEveryByteInOrderInAlignedChunks) {
  const size_t n = (3u << 20) + 24;
  run_transports(2, [&](TcpTransport& t) {
    std::vector<uint64_t> data(n / 8);
    std::iota(data.begin(), data.end(), 0);
    if (t.rank() == 0) {
      send_to(t, op_of(Collective::Reduce, n), 1, data.data(), n);
      return;
    }
    size_t next = 0;
    bool ok = true;
    RecvPart in{0, nullptr, n};
    in.align = 8;
    in.sink = [&](size_t off, const void* chunk, size_t bytes) {
      ok &= off == next && bytes % 8 == 0 && std::memcmp(chunk, reinterpret_cast<char*>(data.data()) + off, bytes) == 0;
      next += bytes;
    };
    t.run({}, {&in, 1}, op_of(Collective::Reduce, n));
    EXPECT_TRUE(ok);
    EXPECT_EQ(next, n);
  });
}

TEST_P(Transport, GatedSendForwardsWhileReceiving) {
  // A chain 0 -> 1 -> 2 where rank 1 forwards bytes as they arrive (pipelined broadcast).
  const size_t n = 8u << 20;
  run_transports(3, [&](TcpTransport& t) {
    std::vector<uint8_t> buf(n, t.rank() == 0 ? 7 : 0);
    auto op = op_of(Collective::Broadcast, n);
    if (t.rank() == 0) {
      send_to(t, op, 1, buf.data(), n);
    } else if (t.rank() == 1) {
      RecvPart in{0, buf.data(), n};
      SendPart out{2, buf.data(), n};
      out.ready = &in.received;
      t.run({&out, 1}, {&in, 1}, op);
    } else {
      recv_from(t, op, 1, buf.data(), n);
    }
    EXPECT_EQ(buf[n / 2], 7);
    EXPECT_EQ(buf[n - 1], 7);
  });
}

TEST_P(Transport, DifferentCallsAreAMismatch) {
  run_transports(2, [](TcpTransport& t) {
    uint32_t x = 0;
    auto op = t.rank() == 0 ? op_of(Collective::AllReduce, 4) : op_of(Collective::Broadcast, 4);
    try {
      send_recv(t, op, 1 - t.rank(), &x, 4, 1 - t.rank(), &x, 4);
      ADD_FAILURE() << "no mismatch";
    } catch (const Error& e) {
      t.abort(e.kind(), message_of(e));  // as the group does: the peer learns why
      EXPECT_EQ(e.kind(), ErrorKind::Mismatch);
      EXPECT_NE(std::string(e.what()).find("all_reduce(u8, 4, Sum)"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("broadcast(u8, 4, root -1)"), std::string::npos) << e.what();
    }
  });
}

TEST_P(Transport, DifferentSizesAreAMismatch) {
  run_transports(2, [](TcpTransport& t) {
    std::vector<uint8_t> buf(64);
    auto op = op_of(Collective::AllReduce, 64);
    try {
      send_recv(t, op, 1 - t.rank(), buf.data(), t.rank() == 0 ? 32 : 64, 1 - t.rank(), buf.data(), 32);
      if (t.rank() == 0) ADD_FAILURE() << "64 bytes accepted where 32 were expected";
    } catch (const Error& e) {
      t.abort(e.kind(), message_of(e));
      // Rank 1's step may finish before rank 0 notices, or see rank 0's abort.
      if (t.rank() == 0) {
        EXPECT_EQ(e.kind(), ErrorKind::Mismatch) << e.what();
      }
    }
  });
}

TEST_P(Transport, StalledPeerTimesOutNamingIt) {
  std::promise<void> done;
  std::shared_future<void> finished = done.get_future().share();
  run_transports(2, [&](TcpTransport& t) {
    uint32_t x = 0;
    if (t.rank() == 1) {
      send_recv(t, op_of(Collective::Barrier, 0), 0, &x, 0, 0, &x, 0);  // connect, then go quiet
      finished.wait();
      return;
    }
    struct Release {
      std::promise<void>& p;
      ~Release() { p.set_value(); }
    } release{done};
    send_recv(t, op_of(Collective::Barrier, 0), 1, &x, 0, 1, &x, 0);
    try {
      recv_from(t, op_of(Collective::Barrier, 0, 100ms, 1), 1, &x, 0);
      ADD_FAILURE() << "no timeout";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Timeout);
      EXPECT_NE(std::string(e.what()).find("receiving from rank 1"), std::string::npos) << e.what();
    }
  });
}

TEST_P(Transport, LostPeerIsPeerLostNamingIt) {
  run_transports(3, [](TcpTransport& t) {
    std::vector<uint8_t> buf(1 << 20);
    auto op = op_of(Collective::Broadcast, buf.size(), 60s);
    if (t.rank() == 2) {
      send_recv(t, op, 0, buf.data(), 16, 0, buf.data(), 16);
      return;  // the transport closes its sockets now
    }
    if (t.rank() == 1) return;
    send_recv(t, op, 2, buf.data(), 16, 2, buf.data(), 16);
    try {
      recv_from(t, op, 2, buf.data(), buf.size());
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::PeerLost);
      EXPECT_NE(std::string(e.what()).find("rank 2"), std::string::npos) << e.what();
    }
  });
}

TEST_P(Transport, AbortTellsThePeerWhy) {
  run_transports(2, [](TcpTransport& t) {
    uint32_t x = 0;
    send_recv(t, op_of(Collective::Barrier, 0), 1 - t.rank(), &x, 0, 1 - t.rank(), &x, 0);
    if (t.rank() == 1) {
      t.abort(ErrorKind::Timeout, "the reason");
      try {
        send_to(t, op_of(Collective::Barrier, 0), 0, &x, 0);
        ADD_FAILURE() << "an aborted transport still works";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("unusable"), std::string::npos) << e.what();
      }
      return;
    }
    try {
      recv_from(t, op_of(Collective::Barrier, 0, 10s, 1), 1, &x, 0);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Timeout);
      EXPECT_NE(std::string(e.what()).find("rank 1 stopped the group: the reason"), std::string::npos) << e.what();
    }
  });
}

// Between ranks of one host a large message is read from the sender's memory. A sender that
// gives up on the call (here: its deadline passes while the receiver is still reading) gets
// its buffer back and reuses it; the receiver must then fail, never return what it read.
TEST_P(Transport, RemoteReadFromASenderThatLeftIsRefused) {
  if (!GetParam()) GTEST_SKIP() << "remote reads go with local sockets (over TCP loopback the bytes travel)";
  const size_t n = size_t(128) << 20;  // read in many chunks: tens of milliseconds
  std::atomic<bool> received{false};
  run_transports(2, [&](TcpTransport& t) {
    uint32_t x = 0;
    send_recv(t, op_of(Collective::Barrier, 0), 1 - t.rank(), &x, 0, 1 - t.rank(), &x, 0);  // connected
    std::vector<char> buf(n, t.rank() == 0 ? 'a' : 'z');
    if (t.rank() == 0) {
      try {
        send_to(t, op_of(Collective::Broadcast, n, 5ms, 1), 1, buf.data(), n);
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Timeout) << e.what();
        t.abort(ErrorKind::Timeout, "the sender gave up");  // what the group does on a failure
        std::fill(buf.begin(), buf.end(), 'X');            // and the caller reuses its buffer
      }
      while (!received.load()) std::this_thread::yield();  // the buffer stays mapped meanwhile
      return;
    }
    try {
      recv_from(t, op_of(Collective::Broadcast, n, 10s, 1), 0, buf.data(), n);
      EXPECT_EQ(std::count(buf.begin(), buf.end(), 'a'), static_cast<long>(n)) << "received what the sender's "
                                                                                    "caller wrote after it left";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
    }
    received = true;
  });
}

TEST_P(Transport, AnySenderFindsTheRankThatSent) {
  run_transports(4, [](TcpTransport& t) {
    OpContext op = op_of(Collective::Send, 4);
    op.p2p = true;
    int32_t v = t.rank();
    if (t.rank() == 0) {
      std::vector<int> peers{1, 2, 3};
      int total = 0;
      for (int i = 0; i < 3; ++i) {
        int from = t.wait_any_sender(peers, op);
        recv_from(t, op, from, &v, 4);
        EXPECT_EQ(v, from);
        total += from;
      }
      EXPECT_EQ(total, 6);
    } else {
      send_to(t, op, 0, &v, 4);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Sockets, Transport, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? std::string("Local") : std::string("Tcp"); });

}  // namespace
}  // namespace spmd
