// N emulated ranks running one collective through the host-compiled device
// interpreter: real plans from the real builders, the device image built by
// the library's buildDeviceImage, in-memory FIFOs between the ranks, random
// inputs, poisoned outputs, and a check of every output element against a
// float64 (floats) or exact (integers, copies) reference.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/cost_model.h"
#include "algorithms/plan.h"
#include "algorithms/verify.h"
#include "src/exec/cuda/device_image.h"
#include "src/util/doorbell.h"
#include "transports/fifo.h"
#include "src/exec/cuda/device_layout.h"
#include "tests/devemu/emulator.h"
#include "weft/weft.h"

namespace weft::devemu {

// Which builder makes the plans: an algorithm of the registry, or the
// fixed AllToAll plan.
struct CallSpec {
  plan::Coll coll = plan::Coll::AllReduce;
  int algo = 0;  // algo::AlgoId; ignored for AllToAll
  int nranks = 3;
  uint64_t count = 100;
  int root = 0;
  int nChannels = 2;
  plan::FifoGeometry geometry{64, 4};
  uint64_t sliceBytes = 0;  // plan for pieces of this many bytes (< slot); 0: the slot
  weftDataType_t type = weftFloat32;
  int opKind = 0;            // cuda::DevOpKind
  bool inPlace = false;
  uint64_t misalign = 0;     // elements added to every user buffer's start
  uint32_t alignBytes = cuda::kDeviceSplitAlignBytes;  // CollArgs::alignBytes, as launch.cc sets it
  uint32_t counterStart = 0; // every FIFO's posted/consumed start here
  // Every FIFO has a credit word in the producer's memory (DevFifo::credit,
  // as p2p FIFOs do); the producer's view of `consumed` is then a decoy that
  // never moves, so a producer reading it would stall to the timeout.
  bool credits = true;
  uint32_t arith = cuda::kArithExact;
  uint32_t proto = cuda::kProtoSimple;  // kProtoLl: plans cut for half-slot pieces, LL FIFOs
  uint64_t timeoutMs = 5000;
  EmuShape shape;
  uint64_t seed = 1;
};

// Everything the harness needs of an element type, type-erased.
struct TypeOps {
  size_t size = 0;
  // A random input for this op (no NaN; Prod keeps magnitudes near 1).
  void (*random)(char* dst, std::mt19937_64& rng, int opKind) = nullptr;
  // The PreMulSum scalar the harness uses, in DevLaunch::scalar's format.
  void (*scalar)(unsigned char dst[8]) = nullptr;
  // Empty when *got is what `terms` combine to (reduced: by the op, within
  // the type's rounding; else one term, bit for bit), else why not.
  std::string (*check)(const char* got, const std::vector<const char*>& terms, bool reduced, int opKind,
                       int nranks) = nullptr;
};
// float32, float16, bfloat16, int32, float64, uint8, int64; throws for others.
TypeOps typeOps(weftDataType_t t);
size_t typeBytes(weftDataType_t t);

// In-memory FIFOs between emulated ranks, one per (from, to, conn), made on
// first use with posted = consumed = `start`.
class Fifos {
 public:
  // ll: the slots' lines start with the flag of the piece before each
  // slot's first (what zeroed memory is for counters starting at 0).
  // credits: see CallSpec::credits.
  Fifos(const plan::FifoGeometry& g, uint32_t start, bool ll = false, bool credits = true)
      : geometry_(g), start_(start), ll_(ll), credits_(credits) {}
  ~Fifos();
  Fifos(const Fifos&) = delete;
  Fifos& operator=(const Fifos&) = delete;
  FifoHeader* get(int from, int to, int conn);  // thread-safe
  // The end the producer (send) or the consumer sees of FIFO from -> to.
  cuda::DevFifo view(int from, int to, int conn, bool producer);
  uint64_t postedSinceStart() const;  // pieces posted over every FIFO
  bool allConsumed() const;  // and every credit word equal to its consumed

 private:
  struct Credit {
    alignas(64) uint32_t credit = 0;  // written by the consumer, read by the producer
    alignas(64) uint32_t decoy = 0;   // the producer's `consumed`: never written
  };
  plan::FifoGeometry geometry_;
  uint32_t start_;
  bool ll_;
  bool credits_;
  std::mutex mu_;
  std::map<std::tuple<int, int, int>, FifoHeader*> fifos_;
  std::map<std::tuple<int, int, int>, std::unique_ptr<Credit>> credit_;
};

// One collective call on every emulated rank: plans, images, buffers and
// launches are made by the constructor; run() runs ranks concurrently.
class Call {
 public:
  explicit Call(const CallSpec& s);
  bool skipped() const { return skipped_; }
  const std::string& skipWhy() const { return skipWhy_; }
  // Runs these ranks' launches concurrently until each returns.
  void run(const std::vector<int>& ranks);
  void runAll();
  // New random inputs and poisoned outputs (out of place only), so the
  // next run on the same FIFOs (counters and LL flags going on) is checked
  // afresh.
  void refresh(uint64_t seed);
  cuda::DevStatus status(int rank) const;
  std::atomic<uint8_t>& abortFlag(int rank) { return ranks_[rank].abort; }
  Fifos& fifos() { return fifos_; }
  std::string check() const;
  // Runs the same plans through the host executor (runHostPlan) on copies
  // of the inputs and its own FIFOs; returns the first byte where a rank's
  // device result differs from the host's, empty when none does.
  std::string compareWithHostExecutor();
  uint64_t piecesExpected() const { return piecesExpected_; }
  // Pieces whose user-buffer pointer (local input or destination) is not
  // 16-byte aligned: the interpreter runs those element by element.
  uint64_t scalarPieces() const;
  const plan::Plan& plan(int rank) const { return plans_[rank]; }
  cuda::DevLaunch& launch(int rank) { return launches_[rank]; }

 private:
  static constexpr uint64_t kGuardElems = 16;
  static constexpr unsigned char kPoison = 0xA5;
  using Storage = std::unique_ptr<char, void (*)(void*)>;
  struct RankBuffers {
    Storage sendMem{nullptr, nullptr}, recvMem{nullptr, nullptr};
    char* send = nullptr;
    char* recv = nullptr;
    uint64_t total = 0;  // aliased: elements of the one allocation
    std::vector<char> input;
    std::vector<char> scratch;
    cuda::DevStatus status{};
    std::atomic<uint8_t> abort{0};
  };
  // A copy of every user allocation (what the host executor writes into),
  // laid out as RankBuffers' with the same offsets.
  struct HostCopy {
    std::vector<char> sendMem, recvMem;
  };
  void runHostRank(int r, Fifos& fifos, std::vector<HostCopy>& copies, std::vector<Doorbell>& bells);
  cuda::DevLaunch launchFor(int rank);

  CallSpec spec_;
  Fifos fifos_;
  TypeOps types_;
  bool skipped_ = false;
  std::string skipWhy_;
  std::vector<plan::Plan> plans_;
  std::vector<cuda::DeviceImage> images_;
  verify::Problem problem_;
  std::unique_ptr<RankBuffers[]> ranks_;
  std::vector<cuda::DevLaunch> launches_;
  uint64_t piecesExpected_ = 0;
};

std::string describe(const CallSpec& s);

}  // namespace weft::devemu
