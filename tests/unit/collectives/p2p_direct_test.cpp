// Large point-to-point messages between ranks of one host go straight into the receiver's
// buffer when it offered it in time, through the ring otherwise, or partly each way (the
// offer came while the payload streamed). Every way must deliver the same bytes, keep the
// order of the messages, and report disagreements as before.
#include <atomic>
#include <chrono>
#include <thread>

#include "harness.hpp"

namespace spmd::test {
namespace {

// Sizes around the single-copy threshold (64 KiB) and the ring (64 KiB less the header).
const size_t kSizes[] = {(64 << 10) / 4 - 1, (64 << 10) / 4, (64 << 10) / 4 + 17, (1 << 20) / 4 + 3};

float value(int rank, size_t k, size_t i) { return float(rank * 1000003 + k * 7919 + i % 9973); }

TEST(PointToPointDirect, ExchangesOfEverySizeArriveWhole) {
  for (int world : {2, 3})
    run_ranks(world, [&](ProcessGroup& g) {
      const int right = (g.rank() + 1) % world, left = (g.rank() + world - 1) % world;
      for (int round = 0; round < 3; ++round)
        for (size_t k = 0; k < std::size(kSizes); ++k) {
          std::vector<float> out(kSizes[k]), in(kSizes[k], -1.0f);
          for (size_t i = 0; i < out.size(); ++i) out[i] = value(g.rank(), k, i);
          for (auto& w : g.batch_isend_irecv({{P2POp::Send, out, right, 0}, {P2POp::Recv, in, left, 0}})) w.wait();
          for (size_t i = 0; i < in.size(); ++i)
            ASSERT_EQ(in[i], value(left, k, i)) << "P=" << world << " size " << kSizes[k] << " element " << i;
        }
    });
}

// One rank sends several large messages in a row before the other receives any (they go
// through the ring and aside); then the other way round, the receiver first. Order holds.
TEST(PointToPointDirect, MessagesKeepTheirOrderWhoeverComesFirst) {
  run_ranks(2, [&](ProcessGroup& g) {
    for (int first_sender : {0, 1}) {
      std::vector<std::vector<float>> bufs;
      for (size_t k = 0; k < std::size(kSizes); ++k) bufs.emplace_back(kSizes[k], -1.0f);
      if (g.rank() == first_sender) {
        std::vector<Work> sends;
        for (size_t k = 0; k < bufs.size(); ++k) {
          for (size_t i = 0; i < bufs[k].size(); ++i) bufs[k][i] = value(g.rank(), k, i);
          sends.push_back(g.send_async(bufs[k], 1 - g.rank(), static_cast<int>(k)));
        }
        for (auto& w : sends) w.wait();
      } else {
        for (size_t k = 0; k < bufs.size(); ++k) {
          g.recv(bufs[k], 1 - g.rank(), static_cast<int>(k));
          for (size_t i = 0; i < bufs[k].size(); ++i)
            ASSERT_EQ(bufs[k][i], value(1 - g.rank(), k, i)) << "message " << k << " element " << i;
        }
      }
      g.barrier();
    }
  });
}

// A message over the eager limit (4 MiB) to a receiver that comes late: the sender streams
// what the ring holds, waits, and writes the rest straight into the buffer the receiver then
// offers. (The sleep only makes the late receiver likely; any order must deliver the same.)
TEST(PointToPointDirect, AMessagePartlyThroughTheRingPartlyDirectArrivesWhole) {
  run_ranks(2, [](ProcessGroup& g) {
    std::vector<float> v((8 << 20) / 4 + 5);
    if (g.rank() == 0) {
      for (size_t i = 0; i < v.size(); ++i) v[i] = value(0, 9, i);
      g.send(v, 1);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      g.recv(v, 0);
      for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], value(0, 9, i)) << "element " << i;
    }
  });
}

// The receiver (rank 1) finds a mismatch and stops the group. The sender's call ends cleanly
// when its message went out before that, or, when it was still waiting (for ring space or for
// the receiver's buffer), with the receiver's reason: either order is right.
void expect_reported_by_receiver(ProcessGroup& g, const Error& e) {
  EXPECT_EQ(e.kind(), ErrorKind::Mismatch) << e.what();
  if (g.rank() == 0) {
    EXPECT_NE(std::string(e.what()).find("rank 1 stopped the group"), std::string::npos) << e.what();
  }
}

// A receiver that expects a larger message than is sent offers a buffer the sender must not
// use: the mismatch is reported as over the ring.
TEST(PointToPointDirect, ASizeMismatchIsReportedNotWritten) {
  run_ranks(2, [](ProcessGroup& g) {
    std::vector<float> v(g.rank() == 0 ? (1 << 18) : (1 << 19), 1.0f);
    try {
      if (g.rank() == 0) g.send(v, 1);
      else g.recv(v, 0);
      if (g.rank() == 1) ADD_FAILURE() << "a 1 MiB message received as 2 MiB";
    } catch (const Error& e) {
      expect_reported_by_receiver(g, e);
      EXPECT_NE(std::string(e.what()).find("262144"), std::string::npos) << e.what();
    }
  });
}

// The same size but another call (a tag, then a dtype, that differ): the offered buffer is
// not written either, and the receiver names both calls.
TEST(PointToPointDirect, AnotherTagOrDtypeOfTheSameSizeIsReportedNotWritten) {
  for (bool tag : {true, false})
    run_ranks(2, [&](ProcessGroup& g) {
      std::vector<float> f(1 << 18, g.rank() == 0 ? 5.0f : -1.0f);
      std::vector<int32_t> i(1 << 18, 7);
      try {
        if (g.rank() == 0) {
          g.send(f, 1, /*tag=*/1);
        } else {
          if (tag) g.recv(f, 0, /*tag=*/2);
          else g.recv(i, 0, /*tag=*/1);
          ADD_FAILURE() << "a mismatched message was received";
        }
      } catch (const Error& e) {
        expect_reported_by_receiver(g, e);
        if (g.rank() == 1 && tag) {
          EXPECT_EQ(f[12345], -1.0f) << "the receiver's buffer was written";
        }
        if (g.rank() == 1 && !tag) {
          EXPECT_EQ(i[12345], 7) << "the receiver's buffer was written";
        }
      }
    });
}

// A receive, or a send over the eager limit, whose peer never comes still ends at the group's
// deadline with Timeout (the wait for an offer must not replace the wait that keeps the
// deadline and watches the peers). The peer leaves once the other has failed.
TEST(PointToPointDirect, APeerThatNeverComesStillTimesOut) {
  for (bool receive : {true, false}) {
    std::atomic<bool> failed{false};
    GroupOptions o;
    o.timeout = std::chrono::milliseconds(500);
    run_ranks(
        2,
        [&](ProcessGroup& g) {
          if (g.rank() == 1) {
            while (!failed.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
            return;
          }
          std::vector<float> v(receive ? (1 << 18) : (8 << 20) / 4, 1.0f);
          try {
            if (receive) g.recv(v, 1);
            else g.send(v, 1);
            ADD_FAILURE() << (receive ? "recv" : "send") << " returned without its peer";
          } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::Timeout) << e.what();
          }
          failed = true;
        },
        o);
  }
}

}  // namespace
}  // namespace spmd::test
