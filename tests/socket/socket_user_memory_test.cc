// The socket transport moving large slots straight from and into the
// caller's memory (FifoUserMemory, WEFT_SOCKET_DIRECT): what lands where,
// what falls back to the slot, and letting go of the memory early.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "socket_fixture.h"

namespace weft {
namespace socket_test {
namespace {

constexpr uint64_t kSlot = 128 * 1024;

class SocketUserMemoryTest : public SocketTransportTest {
 protected:
  void SetUp() override {
    SocketTransportTest::SetUp();
    setenv("WEFT_SOCKET_DIRECT", "64K", 1);
  }
  void TearDown() override {
    SocketTransportTest::TearDown();
    unsetenv("WEFT_SOCKET_DIRECT");
  }
};

// Sizes on both sides of the 64 KB threshold, odd ones, a full slot, and
// ones around the padded head of socket 0.
uint64_t pieceSize(uint64_t i) {
  switch (i % 6) {
    case 0: return kSlot;
    case 1: return 64 * 1024;
    case 2: return 64 * 1024 - 1;
    case 3: return 100 * 1024 + 3;
    case 4: return 8;
    default: return socket_wire::kHeadPayload + 1;
  }
}

// The consumer offers each piece its place in `dst` before the producer
// starts (and keeps offering the next ones as the executor does), the
// producer posts every large piece from `src`: the large pieces land in
// place, the small ones come through the slot, and dst ends up equal to src
// with the poison past it untouched.
TEST_F(SocketUserMemoryTest, LargePiecesGoFromAndLandInCallerMemory) {
  for (const char* nsocks : {"1", "3"}) {
    setenv("WEFT_SOCKET_NSOCKS", nsocks, 1);
    join({kSlot, 4});
    connect();
    FifoEnd out = sendConn_->fifo(), in = recvConn_->fifo();
    ASSERT_NE(out.userMemory, nullptr);
    ASSERT_NE(in.userMemory, nullptr);
    constexpr uint64_t kPieces = 120;
    std::vector<uint64_t> offset(kPieces + 1, 0);
    for (uint64_t i = 0; i < kPieces; ++i) offset[i + 1] = offset[i] + pieceSize(i);
    const uint64_t total = offset[kPieces];
    std::vector<unsigned char> src(total), dst(total + 4096, 0xA5);
    for (uint64_t k = 0; k < total; ++k) src[k] = static_cast<unsigned char>(k * 2654435761u >> 13);
    // Piece `next + ahead`, offered while piece `next` is the next to peek.
    auto offer = [&](uint64_t next, uint32_t ahead) {
      const uint64_t k = next + ahead;
      if (k < kPieces && pieceSize(k) >= in.userMemory->minBytes)
        in.offerLanding(ahead, reinterpret_cast<char*>(dst.data() + offset[k]), pieceSize(k));
    };
    for (uint32_t j = 0; j < 4; ++j) offer(0, j);
    std::thread producer([&] {
      for (uint64_t i = 0; i < kPieces; ++i) {
        void* slot = waitSlot(&ranks_[0].bell, out, Deadline::after(10000), [&] { return out.tryAcquire(); });
        ASSERT_NE(slot, nullptr) << "producer stuck at piece " << i;
        const uint64_t n = pieceSize(i);
        if (n >= out.userMemory->minBytes) {
          out.postFrom(src.data() + offset[i], n);
        } else {
          memcpy(slot, src.data() + offset[i], n);
          out.post(n);
        }
      }
      // The source stays valid until every slot from it is in the kernel.
      EXPECT_NE(waitSlot(&ranks_[0].bell, out, Deadline::after(10000),
                         [&]() -> const void* {
                           return out.hdr->consumed.load() == out.hdr->posted.load() ? out.hdr : nullptr;
                         }),
                nullptr);
    });
    uint64_t landed = 0;
    for (uint64_t i = 0; i < kPieces; ++i) {
      uint64_t n = 0;
      const void* slot = waitSlot(&ranks_[1].bell, in, Deadline::after(10000), [&] { return in.tryPeek(&n); });
      ASSERT_NE(slot, nullptr) << "consumer stuck at piece " << i;
      ASSERT_EQ(n, pieceSize(i));
      const char* at = in.landedAt();
      if (at) {
        EXPECT_EQ(at, reinterpret_cast<char*>(dst.data() + offset[i])) << "piece " << i;
        ++landed;
      } else {
        EXPECT_LT(n, in.userMemory->minBytes) << "piece " << i << " was offered before it was sent";
        memcpy(dst.data() + offset[i], slot, n);
      }
      offer(i, 4);  // the slot entry this release frees: before the mover can place its next piece
      in.release();
    }
    producer.join();
    EXPECT_EQ(landed, kPieces / 6 * 3) << nsocks << " sockets";
    EXPECT_EQ(memcmp(dst.data(), src.data(), total), 0);
    for (uint64_t k = total; k < dst.size(); ++k) ASSERT_EQ(dst[k], 0xA5) << "byte " << k << " past the end";
    EXPECT_FALSE(out.failed());
    EXPECT_EQ(ranks_[0].errorCount() + ranks_[1].errorCount(), 0u);
    TearDown();
  }
  unsetenv("WEFT_SOCKET_NSOCKS");
}

// An offer for another size, or one made after the bytes started to
// arrive, is ignored: the piece comes through the slot intact.
TEST_F(SocketUserMemoryTest, MismatchedOrLateOffersFallBackToTheSlot) {
  join({kSlot, 4});
  connect();
  FifoEnd out = sendConn_->fifo(), in = recvConn_->fifo();
  std::vector<unsigned char> src(kSlot), dst(kSlot, 0);
  for (uint64_t k = 0; k < kSlot; ++k) src[k] = static_cast<unsigned char>(k * 7 + 1);
  in.offerLanding(0, reinterpret_cast<char*>(dst.data()), kSlot - 64);  // wrong size
  for (int i = 0; i < 2; ++i) {
    ASSERT_NE(waitSlot(&ranks_[0].bell, out, Deadline::after(10000), [&] { return out.tryAcquire(); }), nullptr);
    out.postFrom(src.data(), kSlot);
  }
  for (int i = 0; i < 2; ++i) {
    uint64_t n = 0;
    const void* slot = waitSlot(&ranks_[1].bell, in, Deadline::after(10000), [&] { return in.tryPeek(&n); });
    ASSERT_NE(slot, nullptr);
    // Slot 1 is offered only now, when its bytes are (very likely) in.
    if (i == 0) in.offerLanding(1, reinterpret_cast<char*>(dst.data()), kSlot);
    if (i == 0) EXPECT_EQ(in.landedAt(), nullptr);
    if (!in.landedAt()) EXPECT_EQ(memcmp(slot, src.data(), kSlot), 0);
    in.release();
  }
  EXPECT_TRUE(std::all_of(dst.begin(), dst.end(), [&](unsigned char b) { return b == 0; }) ||
              memcmp(dst.data(), src.data(), kSlot) == 0);
  EXPECT_EQ(ranks_[0].errorCount() + ranks_[1].errorCount(), 0u);
}

// A caller leaving early (an error) while a send still reads its memory:
// the connection fails with a message saying so, and nothing touches that
// memory afterwards. With nothing in flight, letting go changes nothing.
TEST_F(SocketUserMemoryTest, AbandonWhileSendingFailsTheConnection) {
  join({kSlot, 4});
  connect();
  FifoEnd out = sendConn_->fifo(), in = recvConn_->fifo();
  std::vector<unsigned char> src(kSlot, 0x3C);
  out.userMemory->abandonUserMemory();
  in.userMemory->abandonUserMemory();
  EXPECT_FALSE(out.failed());
  EXPECT_FALSE(in.failed());
  // The receiver never reads: its FIFO, the socket buffers and then the
  // sender's FIFO fill until the producer stalls.
  for (int posted = 0;; ++posted) {
    void* slot = waitSlot(&ranks_[0].bell, out, Deadline::after(300), [&] { return out.tryAcquire(); });
    if (!slot) break;
    out.postFrom(src.data(), kSlot);
    ASSERT_LT(posted, 10000) << "producer never stalled";
  }
  out.userMemory->abandonUserMemory();
  EXPECT_TRUE(out.failed());
  ASSERT_EQ(ranks_[0].errorCount(), 1u);
  EXPECT_NE(ranks_[0].asyncErrors[0].second.find("ended early"), std::string::npos) << ranks_[0].asyncErrors[0].second;
  std::fill(src.begin(), src.end(), 0);  // would race with a mover still reading it (TSan, ASan builds)
}

// A slot posted by writing the header directly, as a GPU posts host FIFO
// slots, goes out of its slot even when an earlier slot in the same entry
// went out of user memory.
TEST_F(SocketUserMemoryTest, SlotsPostedWithoutAnAddressNeverInheritOne) {
  join({kSlot, 4});
  connect();
  FifoEnd out = sendConn_->fifo(), in = recvConn_->fifo();
  std::vector<unsigned char> user(kSlot, 0x11);
  for (uint32_t i = 0; i < 6; ++i) {
    void* slot = waitSlot(&ranks_[0].bell, out, Deadline::after(10000), [&] { return out.tryAcquire(); });
    ASSERT_NE(slot, nullptr);
    if (i == 0) {
      out.postFrom(user.data(), kSlot);
    } else {
      memset(slot, 0x20 + i, kSlot);
      const uint32_t p = out.hdr->posted.load();
      out.hdr->sizes[p % 4] = kSlot;
      out.hdr->posted.store(p + 1, std::memory_order_release);
      ring(out.consumerBell);
    }
    uint64_t n = 0;
    const void* got = waitSlot(&ranks_[1].bell, in, Deadline::after(10000), [&] { return in.tryPeek(&n); });
    ASSERT_NE(got, nullptr) << "slot " << i;
    ASSERT_EQ(n, kSlot);
    const unsigned char want = i == 0 ? 0x11 : static_cast<unsigned char>(0x20 + i);
    const auto* b = static_cast<const unsigned char*>(got);
    EXPECT_TRUE(std::all_of(b, b + kSlot, [&](unsigned char x) { return x == want; })) << "slot " << i;
    in.release();
  }
  EXPECT_EQ(ranks_[0].errorCount() + ranks_[1].errorCount(), 0u);
}

TEST_F(SocketUserMemoryTest, ZeroTurnsItOff) {
  setenv("WEFT_SOCKET_DIRECT", "0", 1);
  join({kSlot, 4});
  connect();
  EXPECT_EQ(sendConn_->fifo().userMemory, nullptr);
  EXPECT_EQ(recvConn_->fifo().userMemory, nullptr);
}

}  // namespace
}  // namespace socket_test
}  // namespace weft
