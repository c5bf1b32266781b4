// The communicator: what one rank knows and owns.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/plan.h"
#include "algorithms/selector.h"
#include "src/bootstrap/bootstrap.h"
#include "src/core/call_state.h"
#include "src/core/registration.h"
#include "src/kernels/reduce.h"
#include "src/topology/comm_topo.h"
#include "src/topology/rings.h"
#include "src/util/doorbell.h"
#include "src/util/settings.h"
#include "transports/registry.h"
#include "transports/shm/shm_segment.h"
#include "transports/transport.h"
#include "weft/weft.h"

namespace weft {

class CommTrace;
class Connections;
class DirectComm;
struct LowLatencyComm;
class PlanCache;

// A PreMulSum created by weftRedOpCreatePreMulSum.
struct UserRedOp {
  bool live = false;
  weftDataType_t type = weftFloat32;
  alignas(8) unsigned char scalar[8] = {};
};

}  // namespace weft

// The C handle's target. Lives in the global namespace because weft.h
// declares `typedef struct weftComm* weftComm_t`.
struct weftComm {
  static constexpr uint64_t kMagic = 0x7765667443306d6dull;
  uint64_t magic = kMagic;

  int rank = 0;
  int nranks = 1;
  int cudaDev = -1;
  // The WEFT_* settings as they stood when the communicator was created.
  weft::settings::Config config;
  std::string name;  // config.commName or "comm"
  std::string netName;  // "", "Socket" or "IB" (config.netName, else WEFT_NET)
  int64_t timeoutMs = 0;
  int nChannels = 1;
  // The most channels of a device call (src/core/device_channels.h): from
  // WEFT_DEVICE_NCHANNELS, else the GPU link in the topology.
  int deviceChannels = 1;
  weft::plan::FifoGeometry geometry;

  std::unique_ptr<weft::Bootstrap> bootstrap;
  std::vector<weft::PeerInfo> peers;

  // This rank's executor doorbell, in a shm segment that peers on the same
  // host map (threads of this process included).
  weft::ShmSegment bellSegment;
  weft::Doorbell* bell = nullptr;
  // Same-host peers' doorbells, mapped once at init (their names are gone
  // from /dev/shm right after, so a crash leaves nothing behind).
  std::vector<weft::ShmSegment> peerBellSegments;
  std::vector<weft::Doorbell*> peerBells;

  // Algorithm selection: WEFT_ALGO, WEFT_PROTO, the cost model's link
  // parameters, and the host index of every rank (double binary trees span hosts).
  weft::algo::AlgoFilter algoFilter;
  // algoFilter for device buffers: without the one-shot algorithm, whose
  // FIFO plan has been measured on host buffers only.
  weft::algo::AlgoFilter deviceAlgoFilter;
  weft::algo::ProtoFilter protoFilter;
  weft::algo::ProtoFilter deviceProtoFilter;  // protoFilter without ll (src/core/ll_comm.h)
  weft::algo::CostInputs costBase;
  std::vector<int> hostOf;
  // More ranks on this host than CPUs this process may run on.
  bool oversubscribed = true;
  // Fewer than two CPUs per rank of this host: a rank's proxy threads run
  // on the cores of ranks, not beside them.
  bool ranksFillCores = true;
  // This rank's waits busy-poll at first (WEFT_SPIN; by default when it is
  // not oversubscribed), else they yield soon (rankWaitKnobs).
  bool busyPoll = false;
  // Host calls whose output has at least this many bytes write it with
  // non-temporal stores (WEFT_STREAM_MIN_BYTES; 0: never).
  uint64_t streamMinBytes = 0;

  // From the topology (src/topology/comm_topo.h), identical on every rank:
  // the ring order per channel (host-contiguous, devices ordered by their
  // links); and for each same-host peer, what the topology says their pair
  // could use (P2p or Shm; Unknown for other hosts).
  std::vector<std::vector<int>> ringOrders;
  std::vector<weft::topo::PeerTopoKind> peerTopoKind;

  // The transports of the lists (transports/registry.h), made before the
  // PeerInfo all-gather so that each publishes its facts; they outlive the
  // connections they made.
  std::unique_ptr<weft::TransportSet> transports;
  std::unique_ptr<weft::Connections> connections;
  std::unique_ptr<weft::PlanCache> plans;
  // The LL protocol's regions and engine (src/core/ll_comm.h); null when the
  // ranks span hosts or WEFT_PROTO / WEFT_LL_BUFFSIZE turn it off.
  std::unique_ptr<weft::LowLatencyComm> ll;
  // Single-copy collectives on registered buffers (src/core/direct_comm.h);
  // null unless every rank is on this host and WEFT_DIRECT is on.
  std::unique_ptr<weft::DirectComm> direct;
  // The CUDA device path's per-communicator state (src/exec/cuda/device_state.h),
  // created by the first call with device buffers; released before the
  // connections whose FIFOs it maps.
  std::shared_ptr<void> deviceState;

  // Buffers registered with weftCommRegister (src/core/registration.h).
  std::unique_ptr<weft::Registrations> registrations = std::make_unique<weft::Registrations>(this);

  // Serialises execution of this communicator's operations.
  std::mutex execMutex;
  // Scratch space for plans that need it, grown on demand.
  std::vector<char> scratch;
  // Copy of the send buffer for in-place AllToAll.
  std::vector<char> inPlaceStage;

  // The operation this rank is in or last finished, and how far it got:
  // read by diagnosis queries from other threads (src/core/diagnose.h).
  weft::CallState callState;

  std::atomic<bool> aborting{false};
  std::atomic<int> asyncError{weftSuccess};
  std::mutex errorMutex;
  std::string lastError;
  // The error was claimed by claimAsyncError and its text is still to come.
  bool errorClaimed = false;

  // Operations submitted (blocking or on host streams) and not yet
  // finished: an atomic count, so that a call's hand-off takes no lock;
  // inflightBell is rung when it drops to zero (weftCommDestroy waits).
  std::atomic<int> inflight{0};
  weft::Doorbell inflightBell;

  std::mutex redOpMutex;
  std::vector<weft::UserRedOp> userOps;  // index = op - weftNumOps

  uint64_t splitSeq = 0;  // CommSplit calls so far (tags their messages)
  // WEFT_CHECK: compare every collective's arguments across ranks first
  // (src/core/call_check.h); collectives checked so far.
  bool checkCalls = false;
  // WEFT_SLICE_BYTES / WEFT_CALL_CHANNELS: pin the per-call shape the
  // pipeline model would choose (0: let it choose).
  uint64_t sliceOverride = 0;
  int channelsOverride = 0;
  uint64_t checkedCalls = 0;
  // WEFT_TRACE_FILE (src/core/trace.h); null when tracing is off, which is
  // the one thing the call path tests.
  std::unique_ptr<weft::CommTrace> trace;

  weftComm();
  ~weftComm();

  void setAsyncError(weftResult_t code, const std::string& why);
  // Marks the communicator failed with `code` at once, while the text that
  // explains it is still being made (a timeout's diagnosis waits up to
  // seconds for other ranks): a secondary event in that time, such as a peer
  // that gives up first and exits, must not become the reported cause. The
  // next setAsyncError with the same code supplies the text.
  void claimAsyncError(weftResult_t code, const std::string& provisional);
  weftResult_t getAsyncError() const { return static_cast<weftResult_t>(asyncError.load()); }
};

namespace weft {

// Live communicators; API calls check membership so that a destroyed or
// garbage handle is an error, not a crash.
void registerComm(weftComm* comm);
void unregisterComm(weftComm* comm);
bool isLiveComm(const weftComm* comm);
// Runs fn on every live communicator; none of them is freed meanwhile
// (unregisterComm waits), so fn must be bounded (the signal's diagnosis).
void forEachLiveComm(const std::function<void(weftComm*)>& fn);

// The cost model's inputs for this machine's transports (WEFT_TUNE_* from
// config, or from the settings as they stand now).
algo::CostInputs defaultCostInputs(int nranks, int nHosts, const settings::Config& config);
algo::CostInputs defaultCostInputs(int nranks, int nHosts);

// Builds and connects a communicator (the work of weftCommInitRank).
weftComm* createComm(const weftUniqueId& id, int nranks, int rank, const weftConfig_t* config);

// Bootstrap tags: the high byte says what the message is for.
enum TagKind : uint64_t { kTagConnect = 1ull << 56, kTagSplit = 2ull << 56, kTagPeerInfo = 3ull << 56 };

}  // namespace weft
