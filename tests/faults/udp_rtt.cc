// Round-trip times over UDP, for machines without ping (tests of
// lossy_switch's delay, tests/multihost/switch_delay.sh):
//
//   udp_rtt serve <port> <seconds>          echo datagrams back, for at most that long
//   udp_rtt ping <address> <port> <count>   one datagram every 20 ms
//
// ping prints "udp_rtt: sent S, answered A, rtt min/median/max M D X us" and
// exits 0 when at least half were answered (1 otherwise, 2 on bad input).
// Each probe waits at most 1 s for its answer.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

int64_t nowUs() {
  using namespace std::chrono;
  return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

int serve(int port, int seconds) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::perror("udp_rtt: bind");
    return 1;
  }
  const int64_t end = nowUs() + int64_t(seconds) * 1000000;
  char buf[64];
  for (int64_t now = nowUs(); now < end; now = nowUs()) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, int(std::min<int64_t>((end - now) / 1000 + 1, 200))) <= 0) continue;
    sockaddr_in from{};
    socklen_t len = sizeof from;
    ssize_t n = recvfrom(fd, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n > 0) sendto(fd, buf, size_t(n), 0, reinterpret_cast<sockaddr*>(&from), len);
  }
  return 0;
}

int ping(const char* addr, int port, int count) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  if (fd < 0 || inet_pton(AF_INET, addr, &a.sin_addr) != 1 ||
      connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::fprintf(stderr, "udp_rtt: cannot reach %s:%d\n", addr, port);
    return 2;
  }
  std::vector<int64_t> rtts;
  for (uint32_t seq = 0; seq < uint32_t(count); seq++) {
    const int64_t sent = nowUs();
    if (send(fd, &seq, sizeof seq, 0) < 0) continue;
    // Answers to earlier probes that came late are skipped by their number.
    for (int64_t left = 1000000; left > 0; left = 1000000 - (nowUs() - sent)) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, int(left / 1000) + 1) <= 0) break;
      uint32_t got = 0;
      if (recv(fd, &got, sizeof got, 0) == ssize_t(sizeof got) && got == seq) {
        rtts.push_back(nowUs() - sent);
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::sort(rtts.begin(), rtts.end());
  if (rtts.empty()) {
    std::printf("udp_rtt: sent %d, answered 0\n", count);
    return 1;
  }
  std::printf("udp_rtt: sent %d, answered %zu, rtt min/median/max %lld %lld %lld us\n", count, rtts.size(),
              (long long)rtts.front(), (long long)rtts[rtts.size() / 2], (long long)rtts.back());
  return rtts.size() * 2 >= size_t(count) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "serve" && argc == 4) return serve(std::atoi(argv[2]), std::atoi(argv[3]));
  if (mode == "ping" && argc == 5 && std::atoi(argv[4]) > 0) return ping(argv[2], std::atoi(argv[3]), std::atoi(argv[4]));
  std::fprintf(stderr, "usage: udp_rtt serve <port> <seconds> | udp_rtt ping <address> <port> <count>\n");
  return 2;
}
