// Shared-memory names left behind by processes that died before unlinking
// them: the creator's lock tells a dead creator from a live one, and the
// sweep removes only the dead ones' names.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "weft/weft.h"
#include "transports/shm/shm_segment.h"

namespace weft {
namespace {

bool shmExists(const std::string& name) {
  struct stat st;
  return stat(("/dev/shm" + name).c_str(), &st) == 0;
}

// Holds a shared lock on /dev/shm<name> until the descriptor is closed, so
// that no other weft process on the machine (tests run side by side) sweeps
// the segment of a creator that is about to die before this test looks.
int holdLock(const std::string& name) {
  const int fd = open(("/dev/shm" + name).c_str(), O_RDWR | O_CLOEXEC);
  EXPECT_GE(fd, 0) << name;
  if (fd >= 0) EXPECT_EQ(flock(fd, LOCK_SH), 0);
  return fd;
}

// Forks a child that runs `body`, which writes one line to `out` (the fd of
// a pipe) and then either dies or waits for a byte on `hold` before exiting.
struct Child {
  pid_t pid = -1;
  int fromChild = -1;
  int toChild = -1;

  std::string readLine() const {
    std::string s;
    char c;
    while (read(fromChild, &c, 1) == 1 && c != '\n') s += c;
    return s;
  }
  // Lets a holding child go (release) or only closes the pipe to one that
  // ended by itself, then reaps it.
  int finish(bool release) {
    if (release) {
      const char c = 'x';
      EXPECT_EQ(write(toChild, &c, 1), 1);
    }
    close(toChild);
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    close(fromChild);
    return status;
  }
};

template <typename Body>
Child forkChild(Body body) {
  int up[2], down[2];
  EXPECT_EQ(pipe(up), 0);
  EXPECT_EQ(pipe(down), 0);
  Child c;
  c.pid = fork();
  if (c.pid == 0) {
    close(up[0]);
    close(down[1]);
    body(up[1], down[0]);
    _exit(0);
  }
  close(up[1]);
  close(down[0]);
  c.fromChild = up[0];
  c.toChild = down[1];
  return c;
}

void say(int fd, const std::string& line) {
  const std::string s = line + "\n";
  if (write(fd, s.data(), s.size()) != ssize_t(s.size())) _exit(3);
}

void waitFor(int fd) {
  char c;
  if (read(fd, &c, 1) != 1) _exit(4);
}

TEST(ShmSweep, RemovesTheNamesOfDeadCreatorsOnly) {
  // Each process sweeps before its first segment: the live creator and this
  // process make theirs before the dead one exists.
  Child live = forkChild([](int out, int in) {
    ShmSegment s = ShmSegment::create("weft-test", 4096);
    say(out, s.name());
    waitFor(in);
  });
  const std::string liveName = live.readLine();
  ShmSegment own = ShmSegment::create("weft-test", 4096);

  Child dead = forkChild([](int out, int in) {
    ShmSegment s = ShmSegment::create("weft-test", 4096);
    say(out, s.name());
    waitFor(in);
    raise(SIGKILL);
  });
  const std::string deadName = dead.readLine();
  const int guard = holdLock(deadName);
  EXPECT_TRUE(WIFSIGNALED(dead.finish(true)));

  ASSERT_FALSE(deadName.empty());
  ASSERT_FALSE(liveName.empty());
  ASSERT_TRUE(shmExists(deadName)) << "a killed creator cannot unlink its name";
  close(guard);
  EXPECT_GE(sweepOrphanedSegments(), 1);
  EXPECT_FALSE(shmExists(deadName));
  EXPECT_TRUE(shmExists(liveName)) << "a live process's segment was removed";
  EXPECT_TRUE(shmExists(own.name())) << "this process's own segment was removed";

  const int status = live.finish(true);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_FALSE(shmExists(liveName)) << "a creator that exits normally unlinks its name";
  own.unlink();
  EXPECT_FALSE(shmExists(own.name()));
}

// In a folder of its own, with files made by hand: the names the sweep may
// take, and a segment caught between its creation and its size.
TEST(ShmSweep, TakesOnlyLockedNamesThatHaveTheirSizeAndNoHolder) {
  char dir[] = "/tmp/weft-shm-sweep-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  auto make = [&](const char* name, off_t size) {
    const int fd = open((std::string(dir) + "/" + name).c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    EXPECT_GE(fd, 0) << name;
    EXPECT_EQ(ftruncate(fd, size), 0);
    return fd;
  };
  auto exists = [&](const char* name) { return access((std::string(dir) + "/" + name).c_str(), F_OK) == 0; };
  const char* orphan = "weft-mem-0123456789abcdef-lk";
  const char* unsized = "weft-fifo-00000000000000ff-lk";
  const char* locked = "weft-ll-fedcba9876543210-lk";
  // An older build's name (no lock, so no ending) and names create() does
  // not make.
  const char* others[] = {"weft-mem-0123456789abcdef", "weft-mem-0123456789ABCDEF-lk", "weft-mem-0123456789abcde-lk",
                          "lbv-test-0123456789abcdef-lk", "weft-Mem-0123456789abcdef-lk", "weft-0123456789abcdef-lk",
                          "weft-mem-0123456789abcdef-lk2"};
  close(make(orphan, 4096));
  close(make(unsized, 0));
  const int holder = make(locked, 4096);
  ASSERT_EQ(flock(holder, LOCK_SH), 0);
  for (const char* n : others) close(make(n, 4096));

  EXPECT_EQ(sweepOrphanedSegments(dir), 1);
  EXPECT_FALSE(exists(orphan));
  EXPECT_TRUE(exists(unsized)) << "a segment without its size may still be being made";
  EXPECT_TRUE(exists(locked)) << "a locked segment's creator is alive";
  for (const char* n : others) EXPECT_TRUE(exists(n)) << n << " is not a name whose creator locks it";

  close(holder);
  EXPECT_EQ(sweepOrphanedSegments(dir), 1) << "the lock's holder is gone";
  EXPECT_FALSE(exists(locked));
  unlink((std::string(dir) + "/" + unsized).c_str());
  for (const char* n : others) unlink((std::string(dir) + "/" + n).c_str());
  EXPECT_EQ(rmdir(dir), 0);
}

// Through the API: an allocation whose process was killed is gone once
// another process allocates.
TEST(ShmSweep, WeftMemAllocOfAKilledProcessIsRemovedByTheNextProcess) {
  Child dead = forkChild([](int out, int in) {
    void* p = nullptr;
    if (weftMemAlloc(&p, 1 << 16) != weftSuccess) _exit(2);
    char want[32];
    snprintf(want, sizeof(want), "%lx-", reinterpret_cast<unsigned long>(p));
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);) {
      const auto at = line.find("/dev/shm/weft-mem-");
      if (line.rfind(want, 0) == 0 && at != std::string::npos) say(out, line.substr(at + 8));
    }
    say(out, "");
    waitFor(in);
    raise(SIGKILL);
  });
  const std::string name = dead.readLine();
  const int guard = name.empty() ? -1 : holdLock(name);
  EXPECT_TRUE(WIFSIGNALED(dead.finish(true)));
  ASSERT_FALSE(name.empty()) << "the allocation's mapping was not found in the child's /proc/self/maps";
  ASSERT_TRUE(shmExists(name));
  close(guard);

  Child next = forkChild([](int, int) {
    void* p = nullptr;
    if (weftMemAlloc(&p, 4096) != weftSuccess || weftMemFree(p) != weftSuccess) _exit(2);
  });
  const int status = next.finish(false);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_FALSE(shmExists(name)) << name << " outlived its killed creator";
}

}  // namespace
}  // namespace weft
