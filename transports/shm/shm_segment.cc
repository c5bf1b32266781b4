#include "transports/shm/shm_segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstring>

#include "src/util/error.h"
#include "src/util/log.h"

namespace weft {

void prefault(void* mem, size_t bytes) {
  auto* p = static_cast<volatile char*>(mem);
  for (size_t off = 0; off < bytes; off += 4096) p[off] = 0;
}

// Maps a peer's pages into this process without changing their contents.
static void prefaultRead(void* mem, size_t bytes) {
  auto* p = static_cast<volatile const char*>(mem);
  char sink = 0;
  for (size_t off = 0; off < bytes; off += 4096) sink ^= p[off];
  (void)sink;
}

// Ends every name create() makes: its creator holds the segment's lock
// while the name exists (the sweep below relies on it).
static constexpr char kLockedNameEnding[] = "-lk";

static void* mapFd(int fd, size_t bytes, const std::string& name) {
  void* addr = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (addr == MAP_FAILED) {
    const int e = errno;
    close(fd);
    raise(weftSystemError, "shm: mmap of %s (%zu bytes) failed: %s%s", name.c_str(), bytes, strerror(e),
          resourceHint(e).c_str());
  }
  return addr;
}

// Once per process (a forked child is another process): the first segment
// it creates clears what dead processes left first.
static void sweepOncePerProcess() {
  static std::atomic<pid_t> sweptBy{0};
  const pid_t me = getpid();
  if (sweptBy.exchange(me) != me) sweepOrphanedSegments();
}

ShmSegment ShmSegment::create(const std::string& prefix, size_t bytes) {
  sweepOncePerProcess();
  unsigned char rnd[8];
  if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) raiseErrno("getrandom");
  char name[128];
  snprintf(name, sizeof(name), "/%s-%02x%02x%02x%02x%02x%02x%02x%02x%s", prefix.c_str(), rnd[0], rnd[1], rnd[2],
           rnd[3], rnd[4], rnd[5], rnd[6], rnd[7], kLockedNameEnding);
  int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    const int e = errno;
    const std::string hint = resourceHint(e, "shm");
    raise(weftSystemError, "shm: shm_open(%s) failed: %s%s", name, strerror(e),
          hint.empty() ? " (is /dev/shm mounted and writable?)" : hint.c_str());
  }
  // The lock comes before the size: a sweep takes a segment without its
  // size for one still being made.
  if (flock(fd, LOCK_SH) != 0) {
    const int e = errno;
    close(fd);
    shm_unlink(name);
    raise(weftSystemError, "shm: cannot lock %s: %s", name, strerror(e));
  }
  // posix_fallocate reserves the pages now: a full /dev/shm fails here with a
  // clear error instead of SIGBUS on first touch.
  int err = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (err) {
    close(fd);
    shm_unlink(name);
    const std::string hint = resourceHint(err, "shm");
    raise(weftSystemError, "shm: cannot reserve %zu bytes for %s: %s%s", bytes, name, strerror(err),
          hint.empty() ? " (is /dev/shm too small?)" : hint.c_str());
  }
  ShmSegment s;
  s.addr_ = mapFd(fd, bytes, name);
  s.lockFd_ = fd;
  s.bytes_ = bytes;
  s.name_ = name;
  s.owner_ = true;
  prefault(s.addr_, bytes);
  return s;
}

ShmSegment ShmSegment::open(const std::string& name, size_t bytes) {
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) {
    const int e = errno;
    raise(weftSystemError, "shm: cannot open segment %s of a peer: %s%s", name.c_str(), strerror(e),
          resourceHint(e, "shm").c_str());
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < bytes) {
    close(fd);
    raise(weftSystemError, "shm: segment %s is smaller than the %zu bytes expected", name.c_str(), bytes);
  }
  ShmSegment s;
  s.addr_ = mapFd(fd, bytes, name);
  close(fd);
  s.bytes_ = bytes;
  s.name_ = name;
  prefaultRead(s.addr_, bytes);
  return s;
}

ShmSegment& ShmSegment::operator=(ShmSegment&& o) noexcept {
  if (this != &o) {
    this->~ShmSegment();
    addr_ = o.addr_;
    bytes_ = o.bytes_;
    name_ = std::move(o.name_);
    owner_ = o.owner_;
    lockFd_ = o.lockFd_;
    o.addr_ = nullptr;
    o.owner_ = false;
    o.lockFd_ = -1;
  }
  return *this;
}

void ShmSegment::unlink() {
  if (owner_ && !name_.empty()) shm_unlink(name_.c_str());
  owner_ = false;
  if (lockFd_ >= 0) close(lockFd_);
  lockFd_ = -1;
}

// "weft-<lower-case word(s) and dashes>-<16 hex digits>-lk", create()'s
// names.
static bool isCreatedName(const char* n) {
  const size_t len = strlen(n), end = strlen(kLockedNameEnding);
  if (strncmp(n, "weft-", 5) != 0 || len < 5 + 2 + 16 + end || strcmp(n + len - end, kLockedNameEnding) != 0)
    return false;
  const size_t hex = len - end - 16;
  if (n[hex - 1] != '-') return false;
  for (size_t i = hex; i < hex + 16; i++)
    if (!isxdigit(static_cast<unsigned char>(n[i])) || isupper(static_cast<unsigned char>(n[i]))) return false;
  for (size_t i = 5; i < hex - 1; i++)
    if (!islower(static_cast<unsigned char>(n[i])) && n[i] != '-') return false;
  return true;
}

// Removes `name` under `dir` if it is this user's, sized, and nobody holds
// its lock.
static bool removeIfOrphaned(int dirFd, const char* name) {
  const int fd = openat(dirFd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  bool removed = false;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_size > 0 &&
      flock(fd, LOCK_EX | LOCK_NB) == 0)
    removed = unlinkat(dirFd, name, 0) == 0;
  close(fd);
  return removed;
}

int sweepOrphanedSegments(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return 0;
  int removed = 0;
  while (const dirent* e = readdir(d))
    if (isCreatedName(e->d_name) && removeIfOrphaned(dirfd(d), e->d_name)) removed++;
  closedir(d);
  if (removed > 0)
    WEFT_INFO(kShm, "shm: removed %d segment(s) under %s left by processes that died before unlinking them", removed,
              dir);
  return removed;
}

ShmSegment::~ShmSegment() {
  unlink();
  if (addr_) munmap(addr_, bytes_);
  addr_ = nullptr;
}

}  // namespace weft
