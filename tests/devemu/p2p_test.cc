// Grouped point-to-point calls through the host-compiled interpreter, with
// more calls in a group than DevLaunch carries inline (kMaxDeviceBindings):
// DeviceState then passes the (send, recv) pairs in a table in device
// memory (DevLaunch::bindingTable), and the inline array is left empty. Two
// ranks, each with 64 (inline, for comparison), 65, 128 and 257 calls of
// different byte counts, every receive checked byte for byte against its
// sender's buffer, guard bytes untouched.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/p2p.h"
#include "src/exec/cuda/device_image.h"
#include "tests/devemu/emulator.h"
#include "tests/devemu/harness.h"

namespace weft::devemu {
namespace {

constexpr size_t kGuard = 16;
constexpr unsigned char kPoison = 0xC3;

// The k-th send of `rank` (to its peer) moves this many bytes; the peer's
// k-th receive expects the same.
uint64_t bytesOf(int rank, int k) { return 1 + uint64_t(k * 37 + rank * 11) % 300; }

struct Group {
  std::vector<algo::P2POp> calls;
  std::vector<std::vector<unsigned char>> mem;  // per call: guard, payload, guard
  std::vector<cuda::DevBinding> table;
  std::vector<int> nth;                         // per call: its index among this rank's sends or receives
};

// Rank r's calls alternate send and receive, starting with a send on rank
// 0 and a receive on rank 1, so that with an odd count rank 0 sends one more
// than it receives and rank 1 receives it.
Group makeGroup(int rank, int nCalls, std::mt19937_64& rng) {
  Group g;
  int sends = 0, recvs = 0;
  for (int i = 0; i < nCalls; i++) {
    algo::P2POp c;
    c.isSend = (i + rank) % 2 == 0;
    c.peer = 1 - rank;
    const int k = c.isSend ? sends++ : recvs++;
    c.count = c.isSend ? bytesOf(rank, k) : bytesOf(1 - rank, k);
    c.bind = static_cast<uint16_t>(i);
    g.calls.push_back(c);
    g.nth.push_back(k);
    std::vector<unsigned char> m(c.count + 2 * kGuard, kPoison);
    if (c.isSend)
      for (uint64_t j = 0; j < c.count; j++) m[kGuard + j] = static_cast<unsigned char>(rng());
    g.mem.push_back(std::move(m));
  }
  for (int i = 0; i < nCalls; i++) {
    unsigned char* payload = g.mem[i].data() + kGuard;
    g.table.push_back(g.calls[i].isSend ? cuda::DevBinding{payload, nullptr} : cuda::DevBinding{nullptr, payload});
  }
  return g;
}

// The payload of `rank`'s k-th send.
const unsigned char* sentPayload(const Group& g, int k) {
  for (size_t i = 0; i < g.calls.size(); i++)
    if (g.calls[i].isSend && g.nth[i] == k) return g.mem[i].data() + kGuard;
  return nullptr;
}

std::string runGroups(int nCalls) {
  std::mt19937_64 rng{static_cast<uint64_t>(nCalls)};
  Fifos fifos(plan::FifoGeometry{256, 4}, 0);
  Group groups[2] = {makeGroup(0, nCalls, rng), makeGroup(1, nCalls, rng)};
  plan::Plan plans[2];
  cuda::DeviceImage images[2];
  cuda::DevStatus status[2] = {};
  std::atomic<uint8_t> abort{0};
  cuda::DevLaunch launches[2] = {};
  for (int r = 0; r < 2; r++) {
    plans[r] = algo::buildP2P(2, r, 1, groups[r].calls);
    images[r] = cuda::buildDeviceImage(plans[r], [&, r](bool send, int peer, int conn) {
      return send ? fifos.view(r, peer, conn, true) : fifos.view(peer, r, conn, false);
    });
    cuda::DevLaunch& L = launches[r];
    L.channels = images[r].channels.data();
    L.steps = images[r].steps.data();
    L.fifos = images[r].fifos.data();
    L.status = &status[r];
    L.abortFlag = reinterpret_cast<const volatile uint8_t*>(&abort);
    L.timeoutNs = 5000ull * 1000000ull;
    L.elemSize = 1;
    L.sliceBytes = plans[r].sliceBytes;
    L.nranks = 2;
    L.type = weftUint8;
    L.opKind = 0;  // a copy: Sum with one input
    L.nBindings = nCalls;
    // As DeviceState fills it: inline up to kMaxDeviceBindings, else a table.
    if (nCalls <= cuda::kMaxDeviceBindings)
      for (int i = 0; i < nCalls; i++) L.bindings[i] = groups[r].table[i];
    else
      L.bindingTable = groups[r].table.data();
  }
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; r++)
    ranks.emplace_back([&, r] { runLaunch(launches[r], static_cast<int>(plans[r].channels.size()), EmuShape{}); });
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 2; r++) {
    if (status[r].code) return "rank " + std::to_string(r) + " stopped with code " + std::to_string(status[r].code);
    const Group& g = groups[r];
    for (size_t i = 0; i < g.calls.size(); i++) {
      const std::vector<unsigned char>& m = g.mem[i];
      const uint64_t n = g.calls[i].count;
      for (size_t j = 0; j < kGuard; j++)
        if (m[j] != kPoison || m[kGuard + n + j] != kPoison)
          return "rank " + std::to_string(r) + " call " + std::to_string(i) + ": a guard byte changed";
      if (g.calls[i].isSend) continue;
      const unsigned char* want = sentPayload(groups[1 - r], g.nth[i]);
      if (!want || std::memcmp(m.data() + kGuard, want, n) != 0)
        return "rank " + std::to_string(r) + " call " + std::to_string(i) + " (receive " +
               std::to_string(g.nth[i]) + ", " + std::to_string(n) + " bytes) differs from what its peer sent";
    }
  }
  if (!fifos.allConsumed()) return "a FIFO holds pieces nobody consumed";
  return {};
}

TEST(DevEmu, GroupsPastTheInlineBindingsUseTheTable) {
  for (int nCalls : {cuda::kMaxDeviceBindings, 65, 128, 257}) EXPECT_EQ(runGroups(nCalls), "") << nCalls << " calls";
}

}  // namespace
}  // namespace weft::devemu
