#include "benchmarks/common/harness.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "benchmarks/common/format.h"
#include "benchmarks/common/launch.h"
#include "benchmarks/common/options.h"
#include "benchmarks/common/team.h"
#include "benchmarks/common/verify.h"
#include "weft/weft.h"

namespace weft::bench {
namespace {

using Clock = std::chrono::steady_clock;

// A failed library call ends the whole process: the other ranks of the job
// then see a dead peer and stop too, as with nccl-tests.
[[noreturn]] void fatal(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "weft-tests error: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

void checkCall(weftResult_t result, const char* call, weftComm_t comm) {
  if (result == weftSuccess) return;
  const char* detail = weftGetLastError(comm);
  fatal(std::string(call) + " failed: " + weftGetErrorString(result) + (detail && *detail ? std::string(": ") + detail : ""));
}
#define WEFT_BENCH_CALL(call, comm) checkCall((call), #call, (comm))

std::string hostName() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// Ends the process when one measurement runs longer than -T seconds: a hung
// collective would otherwise hang the benchmark.
class Watchdog {
 public:
  explicit Watchdog(double seconds) : seconds_(seconds) {
    if (seconds_ <= 0) return;
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        const long long deadline = deadlineNs_.load();
        const long long now = Clock::now().time_since_epoch().count();
        if (deadline != 0 && now > deadline) {
          fatal("a test ran longer than the -T timeout (" + std::to_string(seconds_) + " s)");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  ~Watchdog() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  void arm() {
    if (seconds_ <= 0) return;
    const auto span = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds_));
    deadlineNs_ = (Clock::now() + span).time_since_epoch().count();
  }

 private:
  double seconds_;
  std::atomic<long long> deadlineNs_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct ResultRow {
  size_t bytes, count;
  std::string type, redop;
  int root;
  bool inPlace;
  double timeUs, algBw, busBw;
  long long wrong;
};

std::string jsonEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

void writeJson(const std::string& path, CollKind kind, const Options& o, int nranks, const std::vector<ResultRow>& rows,
               long long wrongTotal, double avgBusBw) {
  std::ofstream out(path);
  if (!out) fatal("cannot write the JSON output file " + path);
  out << "{\n  \"format\": \"weft-tests-1\",\n  \"test\": \"" << testName(kind) << "\",\n"
      << "  \"weft_version\": " << WEFT_VERSION_CODE << ",\n  \"nranks\": " << nranks << ",\n"
      << "  \"nthreads\": " << o.nThreads << ",\n  \"iters\": " << o.iters << ",\n  \"agg_iters\": " << o.aggIters
      << ",\n  \"warmup_iters\": " << o.warmupIters << ",\n  \"check_iters\": " << o.checkIters << ",\n"
      << "  \"results\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const ResultRow& r = rows[i];
    out << "    {\"size\": " << r.bytes << ", \"count\": " << r.count << ", \"type\": \"" << jsonEscape(r.type)
        << "\", \"redop\": \"" << jsonEscape(r.redop) << "\", \"root\": " << r.root << ", \"placement\": \""
        << (r.inPlace ? "in-place" : "out-of-place") << "\", \"time_us\": " << r.timeUs
        << ", \"algbw_gbps\": " << r.algBw << ", \"busbw_gbps\": " << r.busBw << ", \"wrong\": ";
    if (r.wrong < 0) out << "null"; else out << r.wrong;
    out << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  out << "  ],\n  \"out_of_bounds\": " << wrongTotal << ",\n  \"avg_busbw_gbps\": " << avgBusBw << "\n}\n";
}

struct Shared {
  CollKind kind;
  Options options;
  LaunchInfo launch;
  int nranks;
  weftUniqueId id;
  Team* team;
  Watchdog* watchdog;
  std::atomic<int> exitStatus{0};
};

class AlignedBuffer {
 public:
  // registerWith: -R 1, memory peers on the host can map (weftMemAlloc),
  // registered with that communicator, so calls on it may run single-copy.
  explicit AlignedBuffer(size_t bytes, weftComm_t registerWith = nullptr)
      : bytes_(std::max<size_t>(bytes, 64)), comm_(registerWith) {
    if (comm_) {
      void* p = nullptr;
      if (weftMemAlloc(&p, bytes_) != weftSuccess || weftCommRegister(comm_, p, bytes_, &handle_) != weftSuccess)
        fatal(std::string("-R 1: weftMemAlloc/weftCommRegister failed: ") + weftGetLastError(comm_));
      data_ = static_cast<char*>(p);
    } else {
      data_ = static_cast<char*>(std::aligned_alloc(4096, (bytes_ + 4095) / 4096 * 4096));
    }
    if (!data_) fatal("out of host memory for " + std::to_string(bytes_) + " bytes");
    std::memset(data_, 0, bytes_);  // fault the pages in before timing
  }
  ~AlignedBuffer() {
    if (!comm_) {
      std::free(data_);
      return;
    }
    weftCommDeregister(comm_, handle_);
    weftMemFree(data_);
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  char* data() { return data_; }

 private:
  size_t bytes_;
  weftComm_t comm_;
  void* handle_ = nullptr;
  char* data_;
};

// One rank: a thread of this process.
class RankRunner {
 public:
  RankRunner(Shared& shared, int tid)
      : s_(shared), o_(shared.options), tid_(tid), rank_(shared.launch.procRank * o_.nThreads + tid) {}

  void run() {
    WEFT_BENCH_CALL(weftCommInitRank(&comm_, s_.nranks, s_.id, rank_), nullptr);
    if (s_.launch.nProcs > 1) setUpCrossProcess();
    if (!o_.streamNull) {
      if (weftHostStreamCreate(&stream_) != weftSuccess) {
        stream_ = nullptr;
        if (rank_ == 0) std::fprintf(stderr, "weft-tests: no host stream (%s); every call blocks\n", weftGetLastError(comm_));
      }
    }
    printDevices();
    runSweeps();
    if (stream_) weftHostStreamDestroy(stream_);
    send_.reset();  // registered buffers (-R 1) before their communicator
    recv_.reset();
    s_.team->barrier();
    if (tid_ == 0) s_.team->setCrossProcess(nullptr);  // the leaders' communicator goes before comm_
    WEFT_BENCH_CALL(weftCommDestroy(comm_), nullptr);
  }

 private:
  bool printer() const { return rank_ == 0; }

  void setUpCrossProcess() {
    if (s_.launch.mpi) {
      if (tid_ == 0) s_.team->setCrossProcess(makeMpiCrossProcess());
      s_.team->barrier();
      return;
    }
    weftComm_t leaders = nullptr;
    WEFT_BENCH_CALL(weftCommSplit(comm_, tid_ == 0 ? 0 : WEFT_SPLIT_NOCOLOR, s_.launch.procRank, &leaders, nullptr), comm_);
    if (tid_ == 0) s_.team->setCrossProcess(makeWeftCrossProcess(leaders));
    s_.team->barrier();
  }

  void printDevices() {
    const std::string line = deviceLine(rank_, 0, static_cast<int>(getpid()), hostName(), tid_, "host", "host memory");
    std::vector<std::string> lines = s_.team->allGatherLines(tid_, line);
    if (!printer()) return;
    std::string text = "#\n# Using devices\n";
    for (const std::string& l : lines) text += l;
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
  }

  void barrier() {
    if (stream_) WEFT_BENCH_CALL(weftHostStreamSynchronize(stream_), comm_);
    WEFT_BENCH_CALL(weftAllReduce(barrierWord_, barrierWord_, 1, weftFloat32, weftSum, comm_, nullptr), comm_);
  }

  void sync() {
    if (stream_) WEFT_BENCH_CALL(weftHostStreamSynchronize(stream_), comm_);
  }

  void launch(const void* send, void* recv, const Shape& shape, weftDataType_t type, weftRedOp_t op, int root) {
    const size_t count = shape.paramCount;
    switch (s_.kind) {
      case CollKind::AllReduce:
        WEFT_BENCH_CALL(weftAllReduce(send, recv, count, type, op, comm_, stream_), comm_); break;
      case CollKind::ReduceScatter:
        WEFT_BENCH_CALL(weftReduceScatter(send, recv, count, type, op, comm_, stream_), comm_); break;
      case CollKind::AllGather:
        WEFT_BENCH_CALL(weftAllGather(send, recv, count, type, comm_, stream_), comm_); break;
      case CollKind::Broadcast:
        WEFT_BENCH_CALL(weftBroadcast(send, recv, count, type, root, comm_, stream_), comm_); break;
      case CollKind::Reduce:
        WEFT_BENCH_CALL(weftReduce(send, recv, count, type, op, root, comm_, stream_), comm_); break;
      case CollKind::AllToAll:
        WEFT_BENCH_CALL(weftAlltoAll(send, recv, count, type, comm_, stream_), comm_); break;
      case CollKind::SendRecv: {
        const int next = (rank_ + 1) % s_.nranks, prev = (rank_ - 1 + s_.nranks) % s_.nranks;
        WEFT_BENCH_CALL(weftGroupStart(), comm_);
        WEFT_BENCH_CALL(weftSend(send, count, type, next, comm_, stream_), comm_);
        WEFT_BENCH_CALL(weftRecv(recv, count, type, prev, comm_, stream_), comm_);
        WEFT_BENCH_CALL(weftGroupEnd(), comm_);
        break;
      }
    }
  }

  // One iteration: -m ops inside one group call.
  void iteration(const void* send, void* recv, const Shape& shape, weftDataType_t type, weftRedOp_t op, int root) {
    if (o_.aggIters > 1) WEFT_BENCH_CALL(weftGroupStart(), comm_);
    for (int a = 0; a < o_.aggIters; ++a) launch(send, recv, shape, type, op, root);
    if (o_.aggIters > 1) WEFT_BENCH_CALL(weftGroupEnd(), comm_);
  }

  weftRedOp_t createOp(BenchOp op, weftDataType_t type) {
    if (op != BenchOp::MulSum) return builtinOp(op);
    alignas(8) char scalar[8] = {};
    storeElement(type, scalar, 0, mulSumScalar(rank_));
    weftRedOp_t created;
    WEFT_BENCH_CALL(weftRedOpCreatePreMulSum(&created, scalar, type, weftScalarHostImmediate, comm_), comm_);
    return created;
  }

  void runSweeps() {
    const std::vector<size_t> sizes = sweepSizes(o_);
    weftComm_t reg = o_.localRegister ? comm_ : nullptr;
    send_ = std::make_unique<AlignedBuffer>(o_.maxBytes, reg);
    recv_ = std::make_unique<AlignedBuffer>(o_.maxBytes, reg);
    std::vector<BenchOp> ops = usesOp(s_.kind) ? o_.ops : std::vector<BenchOp>{BenchOp::Sum};
    std::vector<int> roots{-1};
    if (isRooted(s_.kind)) {
      roots.clear();
      if (o_.root < 0) {
        for (int r = 0; r < s_.nranks; ++r) roots.push_back(r);
      } else {
        roots.push_back(o_.root);
      }
    }
    if (printer()) std::fputs(resultHeader().c_str(), stdout);
    for (int cycle = 0; o_.runCycles == 0 || cycle < o_.runCycles; ++cycle) {
      for (weftDataType_t type : o_.types) {
        for (BenchOp op : ops) {
          const weftRedOp_t redOp = createOp(op, type);
          for (int root : roots) {
            for (size_t bytes : sizes) runSize(bytes, type, op, redOp, root);
          }
          if (op == BenchOp::MulSum) WEFT_BENCH_CALL(weftRedOpDestroy(redOp, comm_), comm_);
        }
      }
    }
    if (printer()) {
      const double avg = busBwCount_ ? busBwSum_ / busBwCount_ : 0.0;
      std::fputs(resultFooter(wrongTotal_, avg).c_str(), stdout);
      std::fflush(stdout);
      if (!o_.jsonPath.empty()) writeJson(o_.jsonPath, s_.kind, o_, s_.nranks, rows_, wrongTotal_, avg);
    }
    if (wrongTotal_ > 0) s_.exitStatus = 1;
  }

  void runSize(size_t bytes, weftDataType_t type, BenchOp op, weftRedOp_t redOp, int root) {
    const TypeInfo& info = typeInfo(type);
    const Shape shape = shapeFor(s_.kind, bytes, info.size, s_.nranks);
    const std::string opText = usesOp(s_.kind) ? opName(op) : "none";
    std::string line = resultPrefix(reportedBytes(s_.kind, shape, info.size), shape.paramCount, info.name, opText,
                                    isRooted(s_.kind) ? root : -1);
    for (int inPlace = 0; inPlace < 2; ++inPlace) {
      char* send = send_->data();
      char* recv = recv_->data();
      if (inPlace) {
        if (shape.sendInplaceOffset) {
          send = recv + static_cast<size_t>(rank_) * shape.sendInplaceOffset * info.size;
        } else {
          recv = send + static_cast<size_t>(rank_) * shape.recvInplaceOffset * info.size;
        }
      }
      const int rootArg = root < 0 ? 0 : root;
      if (tid_ == 0) s_.watchdog->arm();
      for (int w = 0; w < o_.warmupIters; ++w) iteration(send, recv, shape, type, redOp, rootArg);
      sync();

      barrier();
      const auto start = Clock::now();
      for (int it = 0; it < o_.iters; ++it) {
        iteration(send, recv, shape, type, redOp, rootArg);
        if (o_.blocking) {
          sync();
          if (o_.blocking == 1) barrier();
        }
      }
      sync();
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      const double localUs = seconds * 1e6 / (static_cast<double>(o_.iters) * o_.aggIters);

      long long wrong = -1;
      if (o_.checkIters > 0 && (!inPlace || inPlaceDefined(s_.kind))) {
        wrong = 0;
        const CheckSpec spec{s_.kind, type, op, s_.nranks, rank_, rootArg};
        char* poisonBase = inPlace && !shape.sendInplaceOffset ? send : recv;
        const size_t poisonBytes = inPlace ? std::max(shape.sendCount, shape.recvCount) * info.size
                                           : shape.recvCount * info.size;
        for (int c = 0; c < o_.checkIters; ++c) {
          poison(poisonBase, poisonBytes);
          fillInput(spec, send, shape.sendCount);
          launch(send, recv, shape, type, redOp, rootArg);
          sync();
          wrong += countWrong(spec, shape, recv);
        }
      }
      record(line, shape, info, bytes, type, opText, root, inPlace, localUs, wrong);
    }
    if (printer()) {
      std::fputs((line + "\n").c_str(), stdout);
      std::fflush(stdout);
    }
  }

  void record(std::string& line, const Shape& shape, const TypeInfo& info, size_t, weftDataType_t,
              const std::string& opText, int root, int inPlace, double localUs, long long wrong) {
    // Time across ranks per -a; wrong elements are summed over ranks.
    const Combine how = o_.average == 2 ? Combine::Min : o_.average == 3 ? Combine::Max : Combine::Sum;
    double mine = localUs;
    if (o_.average == 0) mine = rank_ == 0 ? localUs : 0.0;
    double timeUs = s_.team->allReduce(tid_, {mine}, how)[0];
    if (o_.average == 1) timeUs /= s_.nranks;
    const double wrongSum = s_.team->allReduce(tid_, {static_cast<double>(std::max(wrong, 0LL))}, Combine::Sum)[0];
    const long long wrongAll = wrong < 0 ? -1 : static_cast<long long>(wrongSum);
    const double algBw = timeUs > 0 ? algBytes(s_.kind, shape, info.size, s_.nranks) / 1e9 / (timeUs / 1e6) : 0.0;
    const double busBw = algBw * busFactor(s_.kind, s_.nranks);
    if (wrongAll > 0) wrongTotal_ += wrongAll;
    busBwSum_ += busBw;
    ++busBwCount_;
    line += resultPart(timeUs, algBw, busBw, wrongAll);
    if (printer() && !o_.jsonPath.empty()) {
      rows_.push_back({reportedBytes(s_.kind, shape, info.size), shape.paramCount, info.name, opText,
                       isRooted(s_.kind) ? root : -1, inPlace != 0, timeUs, algBw, busBw, wrongAll});
    }
  }

  Shared& s_;
  const Options& o_;
  int tid_;
  int rank_;
  weftComm_t comm_ = nullptr;
  weftStream_t stream_ = nullptr;
  std::unique_ptr<AlignedBuffer> send_, recv_;
  alignas(16) float barrierWord_[4] = {};
  long long wrongTotal_ = 0;
  double busBwSum_ = 0;
  long long busBwCount_ = 0;
  std::vector<ResultRow> rows_;
};

std::string validate(const Options& o, CollKind kind, int nranks) {
  if (o.memory == MemoryKind::Device) {
    return "--mem device: device buffers are not supported by the perf binaries yet; use --mem host";
  }
  if (o.nGpus > 1) {
    return "-g " + std::to_string(o.nGpus) +
           ": several GPUs per thread need device buffers, which this build does not run; use -t for more ranks";
  }
  if (isRooted(kind) && o.root >= nranks) {
    return "-r " + std::to_string(o.root) + ": root must be below the number of ranks (" + std::to_string(nranks) + ")";
  }
  return "";
}

}  // namespace

int benchMain(CollKind kind, int argc, char** argv) {
  ParseResult parsed = parseOptions(argc, argv);
  const char* program = argc > 0 ? argv[0] : testName(kind);
  if (!parsed.error.empty()) {
    std::fprintf(stderr, "%s: %s\n%s", program, parsed.error.c_str(), usageText(program).c_str());
    return 2;
  }
  if (parsed.options.help) {
    std::fputs(usageText(program).c_str(), stdout);
    return 0;
  }
  std::string launchError;
  auto env = [](const char* name) -> const char* { return std::getenv(name); };
  Shared shared;
  shared.kind = kind;
  shared.options = parsed.options;
  shared.launch = detectLaunch(env, mpiAvailable(), &launchError);
  if (!launchError.empty()) {
    std::fprintf(stderr, "%s: %s\n", program, launchError.c_str());
    return 2;
  }
  const Options& o = shared.options;
  if (shared.launch.mpi) mpiInit(&argc, &argv);
  shared.nranks = shared.launch.nProcs * o.nThreads;
  if (std::string error = validate(o, kind, shared.nranks); !error.empty()) {
    std::fprintf(stderr, "%s: %s\n", program, error.c_str());
    if (shared.launch.mpi) mpiFinalize();
    return 2;
  }
  for (const std::string& flag : o.ignored) std::fprintf(stderr, "%s: ignoring %s (GPU-only option)\n", program, flag.c_str());

  // The unique id: one process makes it and shares it in memory; MPI jobs
  // broadcast rank 0's; other launches build it on every process from
  // WEFT_COMM_ID (rank 0's bootstrap address), so nothing is exchanged.
  if (shared.launch.nProcs > 1 && !shared.launch.mpi && !std::getenv("WEFT_COMM_ID")) {
    std::fprintf(stderr,
                 "%s: launched as %d processes (%s) without MPI: set WEFT_COMM_ID=<ip>:<port> of rank 0 "
                 "(benchmarks/weft-run does)\n",
                 program, shared.launch.nProcs, shared.launch.rankSource.c_str());
    return 2;
  }
  if (!shared.launch.mpi || shared.launch.procRank == 0) {
    WEFT_BENCH_CALL(weftGetUniqueId(&shared.id), nullptr);
  }
  if (shared.launch.mpi) mpiBroadcastBytes(&shared.id, sizeof shared.id, 0);

  const bool printer = shared.launch.procRank == 0;
  if (printer) {
    int libraryVersion = 0;
    weftGetVersion(&libraryVersion);
    std::string text = versionLine(WEFT_VERSION_CODE, libraryVersion) + startLine(testName(kind));
    text += paramLine({o.nThreads, o.nGpus, o.minBytes, o.maxBytes, o.stepBytes, o.stepFactor, o.warmupIters,
                       o.iters, o.aggIters, o.checkIters});
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
  }

  Team team(o.nThreads, shared.launch.nProcs);
  Watchdog watchdog(o.timeoutSec);
  shared.team = &team;
  shared.watchdog = &watchdog;
  std::vector<std::thread> threads;
  for (int t = 0; t < o.nThreads; ++t) {
    threads.emplace_back([&shared, t] {
      try {
        RankRunner(shared, t).run();
      } catch (const std::exception& e) {
        fatal(e.what());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  if (printer) {
    std::fputs(concludedLine(testName(kind)).c_str(), stdout);
    std::fflush(stdout);
  }
  if (shared.launch.mpi) mpiFinalize();
  return shared.exitStatus.load();
}

}  // namespace weft::bench
