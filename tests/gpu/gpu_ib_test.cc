// Device AllReduce between two processes over IB: with GPUDirect RDMA at
// both ends, at one end only, and staged through host memory. Needs a GPU
// and an ACTIVE IB/RoCE port (the two processes act as two hosts and meet
// through the HCA's loopback); without them each test is skipped with the
// reason, from the same decisions the library makes.
//
// Each rank runs in a fresh process (this binary, re-executed): a process
// that has touched CUDA must not fork, and each rank needs its own
// environment (host id, GPUDirect settings, log file).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "transports/ib/ib_transport.h"
#include "weft/weft.h"

extern char** environ;

namespace {

constexpr const char* kRankVar = "WEFT_GPU_IB_TEST_RANK";
constexpr const char* kIdVar = "WEFT_GPU_IB_TEST_ID";

int visibleGpus() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

std::string toHex(const weftUniqueId& id) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (unsigned char c : id.internal) {
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}

bool fromHex(const std::string& s, weftUniqueId* id) {
  if (s.size() != 2 * sizeof id->internal) return false;
  for (size_t i = 0; i < sizeof id->internal; ++i)
    id->internal[i] = static_cast<char>(std::stoi(s.substr(2 * i, 2), nullptr, 16));
  return true;
}

// One rank: a device AllReduce of several slots plus a ragged tail, three
// times, then a one-element one; exact results. Returns the exit code.
int runRank(int rank, const weftUniqueId& id) {
  int gpus = visibleGpus();
  if (gpus == 0) return 10;
  if (cudaSetDevice(rank % gpus) != cudaSuccess) return 11;
  weftComm_t comm = nullptr;
  if (weftCommInitRank(&comm, 2, id, rank) != weftSuccess) {
    std::fprintf(stderr, "rank %d: init failed: %s\n", rank, weftGetLastError(nullptr));
    return 2;
  }
  int rc = 0;
  cudaStream_t stream = nullptr;
  if (cudaStreamCreate(&stream) != cudaSuccess) rc = 12;
  for (size_t count : {(size_t(4) << 20) / sizeof(float) + 17, size_t(1)}) {
    std::vector<float> host(count), out(count, -1.0f);
    for (size_t i = 0; i < count; ++i) host[i] = static_cast<float>(i % 1000) + 0.5f * static_cast<float>(rank);
    float *send = nullptr, *recv = nullptr;
    if (rc == 0 && (cudaMalloc(reinterpret_cast<void**>(&send), count * sizeof(float)) != cudaSuccess ||
                    cudaMalloc(reinterpret_cast<void**>(&recv), count * sizeof(float)) != cudaSuccess ||
                    cudaMemcpy(send, host.data(), count * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess))
      rc = 13;
    for (int iter = 0; iter < 3 && rc == 0; ++iter) {
      cudaMemsetAsync(recv, 0xff, count * sizeof(float), stream);
      if (weftAllReduce(send, recv, count, weftFloat32, weftSum, comm, stream) != weftSuccess) {
        std::fprintf(stderr, "rank %d: AllReduce failed: %s\n", rank, weftGetLastError(comm));
        rc = 3;
        break;
      }
      if (cudaStreamSynchronize(stream) != cudaSuccess ||
          cudaMemcpy(out.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) {
        rc = 14;
        break;
      }
      for (size_t i = 0; i < count; ++i) {
        float want = 2.0f * static_cast<float>(i % 1000) + 0.5f;
        if (out[i] != want) {
          std::fprintf(stderr, "rank %d: count %zu iteration %d: element %zu is %g, expected %g\n", rank, count,
                       iter, i, out[i], want);
          rc = 4;
          break;
        }
      }
    }
    cudaFree(send);
    cudaFree(recv);
  }
  weftResult_t async = weftSuccess;
  weftCommGetAsyncError(comm, &async);
  if (rc == 0 && async != weftSuccess) rc = 5;
  weftCommDestroy(comm);
  if (stream) cudaStreamDestroy(stream);
  return rc;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct PairRun {
  int exit[2] = {-1, -1};
  std::string log[2];
};

// Starts both ranks with the shared settings plus each rank's own, waits
// at most 180 s, and returns their exit codes and logs.
using EnvVars = std::map<std::string, std::string>;

PairRun runPair(const EnvVars& rank0Env, const EnvVars& rank1Env) {
  PairRun run;
  weftUniqueId id;
  if (weftGetUniqueId(&id) != weftSuccess) {
    ADD_FAILURE() << "weftGetUniqueId failed";
    return run;
  }
  const std::string dir = std::filesystem::temp_directory_path() / ("weft-gpu-ib-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  pid_t pids[2] = {-1, -1};
  for (int r = 0; r < 2; ++r) {
    std::map<std::string, std::string> env;
    for (char** e = environ; *e; ++e) {
      std::string kv = *e;
      size_t eq = kv.find('=');
      if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    // Two "hosts" (distinct host ids, no shared memory), joined over IB.
    env["WEFT_HOSTID"] = "weft-gpu-ib-host" + std::to_string(r);
    env["WEFT_NET"] = "IB";
    env["WEFT_SHM_DISABLE"] = "1";
    env["WEFT_TIMEOUT_MS"] = "60000";
    env["WEFT_DEBUG"] = "INFO";
    env["WEFT_DEBUG_SUBSYS"] = "INIT,NET";
    env["WEFT_DEBUG_FILE"] = dir + "/rank" + std::to_string(r) + ".log";
    env[kRankVar] = std::to_string(r);
    env[kIdVar] = toHex(id);
    for (const auto& [k, v] : (r == 0 ? rank0Env : rank1Env)) env[k] = v;
    std::vector<std::string> flat;
    for (const auto& [k, v] : env) flat.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& s : flat) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string self = "/proc/self/exe";
    char* argv[] = {self.data(), nullptr};
    std::filesystem::remove(env["WEFT_DEBUG_FILE"]);
    if (posix_spawn(&pids[r], "/proc/self/exe", nullptr, nullptr, argv, envp.data()) != 0) {
      ADD_FAILURE() << "cannot start rank " << r;
      pids[r] = -1;
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  for (int r = 0; r < 2; ++r) {
    if (pids[r] < 0) continue;
    int status = 0;
    for (;;) {
      pid_t got = waitpid(pids[r], &status, WNOHANG);
      if (got == pids[r]) {
        run.exit[r] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        for (pid_t p : pids)
          if (p > 0) kill(p, SIGKILL);
        waitpid(pids[r], &status, 0);
        ADD_FAILURE() << "rank " << r << " did not finish within 180 s";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    run.log[r] = slurp(dir + "/rank" + std::to_string(r) + ".log");
  }
  std::filesystem::remove_all(dir);
  return run;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Skips unless a GPU and an active IB/RoCE port are there; with
// `needGdr`, also unless this machine can do GPUDirect RDMA. Returns the
// skip message, or "" to run.
std::string whyNot(bool needGdr) {
  if (visibleGpus() == 0) return "no GPU visible (cudaGetDeviceCount == 0 or no driver)";
  std::string ib = weft::ibUnusableReason();
  if (!ib.empty()) return "no usable IB/RoCE port: " + ib;
  if (needGdr) {
    weft::ib::GdrDecision d = weft::chooseDeviceGdr(0, 0, true);
    if (d.mode == weft::ib::GdrMode::Staged) return "GPU 0 cannot use GPU Direct RDMA here: " + d.reason;
  }
  return "";
}

#define SKIP_UNLESS(needGdr)                             \
  do {                                                   \
    std::string why_ = whyNot(needGdr);                  \
    if (!why_.empty()) GTEST_SKIP() << why_;             \
  } while (0)

void expectClean(const PairRun& run) {
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(run.exit[r], 0) << "rank " << r << " failed (its stderr is above); log:\n" << run.log[r];
}

}  // namespace

TEST(GpuIb, AllReduceWithGpuDirectRdmaAtBothEnds) {
  SKIP_UNLESS(true);
  PairRun run = runPair({}, {});
  expectClean(run);
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(has(run.log[r], "-> rank " + std::to_string(1 - r) + ": GPU Direct RDMA via")) << run.log[r];
    EXPECT_TRUE(has(run.log[r], "<- rank " + std::to_string(1 - r) + ": GPU Direct RDMA via")) << run.log[r];
    EXPECT_TRUE(has(run.log[r], "flush by RDMA read")) << run.log[r];
    EXPECT_TRUE(has(run.log[r], "/GDR-")) << "describe() names the GPUDirect connection\n" << run.log[r];
    EXPECT_FALSE(has(run.log[r], "staged through host memory:")) << run.log[r];
  }
}

TEST(GpuIb, AllReduceWithGpuDirectRdmaAtOneEnd) {
  SKIP_UNLESS(true);
  PairRun run = runPair({{"WEFT_GDR_DISABLE", "1"}}, {});
  expectClean(run);
  EXPECT_TRUE(has(run.log[0], "staged through host memory: GPU Direct RDMA disabled by WEFT_GDR_DISABLE"))
      << run.log[0];
  EXPECT_TRUE(has(run.log[0], "(device) : 0 -> 1 via NET/IB")) << "a device connection of its own\n" << run.log[0];
  EXPECT_TRUE(has(run.log[1], "GPU Direct RDMA via")) << run.log[1];
}

TEST(GpuIb, AllReduceStagedThroughHostMemory) {
  SKIP_UNLESS(false);
  PairRun run = runPair({{"WEFT_GDR_DISABLE", "1"}}, {{"WEFT_GDR_DISABLE", "1"}});
  expectClean(run);
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(has(run.log[r], "staged through host memory: GPU Direct RDMA disabled by WEFT_GDR_DISABLE"))
        << run.log[r];
    EXPECT_FALSE(has(run.log[r], "(device) :")) << "device traffic shares the host connection\n" << run.log[r];
  }
}

int main(int argc, char** argv) {
  if (const char* rank = std::getenv(kRankVar)) {
    weftUniqueId id;
    const char* hex = std::getenv(kIdVar);
    if (!hex || !fromHex(hex, &id)) return 9;
    return runRank(std::atoi(rank), id);
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
