// The loopback verbs provider's shared segments (/dev/shm/lbv-test-<pid>-*)
// do not outlive the ibloop tests: a test process that exits normally
// leaves none, and the segments of one that was killed (a ctest timeout)
// are removed by the next ibloop process once all of its processes are
// gone (ibloop_env.h). The subject is a real ibloop test binary, run as a
// child: IbloopAddressing.QpAttributesFollowTheSettings forks two ranks
// that connect over the provider.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ibloop_env.h"
#include "src/util/clock.h"

extern char** environ;

namespace weft::test {
namespace {

int64_t nowMs() { return weft::nowNs() / 1000000; }

// Starts the ibloop test binary with one test selected, its output to
// /dev/null; -1 when it could not be started.
pid_t startIbloopChild() {
  std::string filter = "--gtest_filter=IbloopAddressing.QpAttributesFollowTheSettings";
  std::vector<char*> argv{const_cast<char*>(IBLOOP_CHILD_BINARY), filter.data(), nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, IBLOOP_CHILD_BINARY, &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

struct ChildEnd {
  bool ended = false;
  int status = 0;
  size_t mostSegments = 0;  // the most of its fabric's segments seen at once
};

// Polls the child until it ends (or, with stopAtSegments, until its fabric
// has segments), at most boundMs; kills it at the bound.
ChildEnd watchChild(pid_t pid, int64_t boundMs, bool stopAtSegments) {
  ChildEnd out;
  const std::string fabric = ibloopFabric(pid);
  const int64_t deadline = nowMs() + boundMs;
  while (nowMs() < deadline) {
    out.mostSegments = std::max(out.mostSegments, fabricSegments(fabric).size());
    if (stopAtSegments && out.mostSegments > 0) return out;
    if (waitpid(pid, &out.status, WNOHANG) == pid) {
      out.ended = true;
      return out;
    }
    usleep(2000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &out.status, 0);
  return out;
}

TEST(IbloopCleanup, NormalExitLeavesNoSegments) {
  const pid_t pid = startIbloopChild();
  ASSERT_GT(pid, 0);
  const ChildEnd end = watchChild(pid, 120000, false);
  ASSERT_TRUE(end.ended) << "the ibloop child did not end within 120 s";
  ASSERT_TRUE(WIFEXITED(end.status) && WEXITSTATUS(end.status) == 0) << "status " << end.status;
  // The check can fail: the run made segments while it ran.
  EXPECT_GT(end.mostSegments, 0u);
  const std::vector<std::string> left = fabricSegments(ibloopFabric(pid));
  EXPECT_TRUE(left.empty()) << left.size() << " segments left, the first " << (left.empty() ? "" : left[0]);
}

TEST(IbloopCleanup, KilledRunIsSweptOnceItsRanksAreGone) {
  const pid_t pid = startIbloopChild();
  ASSERT_GT(pid, 0);
  const ChildEnd seen = watchChild(pid, 60000, true);
  ASSERT_GT(seen.mostSegments, 0u) << "the ibloop child made no segments within 60 s";
  kill(pid, SIGKILL);  // its ranks, orphaned, run on to their end
  waitpid(pid, nullptr, 0);
  const std::string fabric = ibloopFabric(pid);
  EXPECT_FALSE(fabricSegments(fabric).empty());  // a killed process removes nothing itself
  const int64_t deadline = nowMs() + 60000;
  while (!fabricSegments(fabric).empty() && nowMs() < deadline) {
    sweepStaleFabrics();
    usleep(20000);
  }
  EXPECT_TRUE(fabricSegments(fabric).empty()) << "not swept within 60 s";
}

pid_t deadPid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

void makeSegment(const std::string& name) {
  const int fd = open(("/dev/shm/" + name).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0) << name;
  close(fd);
}

bool exists(const std::string& name) { return access(("/dev/shm/" + name).c_str(), F_OK) == 0; }

// A fabric is swept only when its owner and every process with a bell in
// it are gone; an owner's pid that prefixes another's is not its fabric.
TEST(IbloopCleanup, SweepKeepsFabricsWithALiveProcess) {
  const pid_t dead = deadPid(), deadRank = deadPid();
  const std::string self = std::to_string(getpid());
  const std::string stale = ibloopFabric(dead) + "-q9", staleBell = ibloopFabric(dead) + "-p" + std::to_string(deadRank);
  const std::string live = ibloopFabric(getpid()) + "-qpn";
  const std::string liveRank = ibloopFabric(deadPid()) + "-p" + self;  // owner gone, a rank still here
  for (const std::string& n : {stale, staleBell, live, liveRank}) makeSegment(n);
  EXPECT_GE(sweepStaleFabrics(), 2);
  EXPECT_FALSE(exists(stale));
  EXPECT_FALSE(exists(staleBell));
  EXPECT_TRUE(exists(live));
  EXPECT_TRUE(exists(liveRank));
  for (const std::string& n : {live, liveRank}) unlink(("/dev/shm/" + n).c_str());
}

// Removing the fabric of pid P leaves that of pid P1, P2, ...
TEST(IbloopCleanup, RemovingAFabricLeavesThoseItsNamePrefixes) {
  const pid_t dead = deadPid();
  const std::string own = ibloopFabric(dead) + "-qpn", longer = ibloopFabric(dead) + "7-qpn";
  makeSegment(own);
  makeSegment(longer);
  removeFabric(ibloopFabric(dead));
  EXPECT_FALSE(exists(own));
  EXPECT_TRUE(exists(longer));
  unlink(("/dev/shm/" + longer).c_str());
}

}  // namespace
}  // namespace weft::test
