// AllReduce over IB between two processes. Needs an ACTIVE IB/RoCE port;
// without one it is skipped and the reason (from the same decision the
// transport uses) is printed.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "transports/ib/ib_transport.h"
#include "weft/weft.h"

namespace {

// Runs one rank; returns a process exit code (0 = the result was exact).
int runRank(int rank, const weftUniqueId& id) {
  // Distinct host ids make the two processes look like two hosts, so the
  // core picks the network transport; WEFT_NET=IB makes it IB, not sockets.
  std::string host = "weft-ib-test-host" + std::to_string(rank);
  setenv("WEFT_HOSTID", host.c_str(), 1);
  setenv("WEFT_NET", "IB", 1);
  setenv("WEFT_SHM_DISABLE", "1", 1);
  weftComm_t comm = nullptr;
  if (weftCommInitRank(&comm, 2, id, rank) != weftSuccess) {
    std::fprintf(stderr, "rank %d: init failed: %s\n", rank, weftGetLastError(nullptr));
    return 2;
  }
  const size_t count = (size_t(4) << 20) / sizeof(float) + 17;  // several slots, and a ragged tail
  std::vector<float> send(count), recv(count, -1.0f);
  for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>(i % 1000) + 0.5f * static_cast<float>(rank);
  int rc = 0;
  for (int iter = 0; iter < 3 && rc == 0; ++iter) {
    if (weftAllReduce(send.data(), recv.data(), count, weftFloat32, weftSum, comm, nullptr) != weftSuccess) {
      std::fprintf(stderr, "rank %d: AllReduce failed: %s\n", rank, weftGetLastError(comm));
      rc = 3;
      break;
    }
    for (size_t i = 0; i < count; ++i) {
      float want = 2.0f * static_cast<float>(i % 1000) + 0.5f;
      if (recv[i] != want) {
        std::fprintf(stderr, "rank %d: element %zu is %g, expected %g\n", rank, i, recv[i], want);
        rc = 4;
        break;
      }
    }
  }
  weftResult_t async = weftSuccess;
  weftCommGetAsyncError(comm, &async);
  if (rc == 0 && async != weftSuccess) rc = 5;
  weftCommDestroy(comm);
  return rc;
}

}  // namespace

TEST(IbRuntime, AllReduceBetweenTwoProcesses) {
  std::string why = weft::ibUnusableReason();
  if (!why.empty()) GTEST_SKIP() << "no usable IB/RoCE port: " << why;

  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  // Fork before the unique id starts the bootstrap root's thread.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[1]);
    weftUniqueId id;
    size_t got = 0;
    while (got < sizeof id) {
      ssize_t n = read(fds[0], reinterpret_cast<char*>(&id) + got, sizeof id - got);
      if (n <= 0) _exit(9);
      got += static_cast<size_t>(n);
    }
    _exit(runRank(1, id));
  }
  close(fds[0]);
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  ASSERT_EQ(write(fds[1], &id, sizeof id), static_cast<ssize_t>(sizeof id));
  close(fds[1]);
  int rc0 = runRank(0, id);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(rc0, 0) << "rank 0 failed (see stderr)";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "rank 1 failed (see stderr)";
}
