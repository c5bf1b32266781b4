// A userspace Ethernet switch that drops a given share of frames at random,
// for kernels without the netem qdisc (tools/fault-campaign.sh, scenario
// loss). Run inside the switch namespace of tests/multihost/netns_hosts.sh
// after its ports left the bridge:
//
//   lossy_switch [@]<drop percent> <port>...
//
// With "@" before the percentage, frames pass untouched until the switch gets
// SIGUSR1 (loss switched on mid-run).
//
// Every frame that arrives on a port goes out of every other port (hosts
// drop frames for other MAC addresses), unless the dice say drop. Frames
// keep their virtio-net header (PACKET_VNET_HDR), so checksum offload and
// segmentation survive the hop. Runs until killed; on SIGTERM/SIGINT prints
// "lossy_switch: F frames, D dropped" (frames since the loss began) and exits 0.
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

volatile sig_atomic_t gStop = 0;
volatile sig_atomic_t gArmed = 1;
void onSignal(int) { gStop = 1; }
void onArm(int) { gArmed = 1; }

int openPort(const char* name) {
  int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
  if (fd < 0) return -1;
  int on = 1;
  if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &on, sizeof on) != 0) return -1;
  sockaddr_ll a{};
  a.sll_family = AF_PACKET;
  a.sll_protocol = htons(ETH_P_ALL);
  a.sll_ifindex = int(if_nametoindex(name));
  if (a.sll_ifindex == 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s <drop percent> <port> <port>...\n", argv[0]);
    return 2;
  }
  const bool later = argv[1][0] == '@';
  const double drop = std::atof(argv[1] + (later ? 1 : 0)) / 100.0;
  if (later) gArmed = 0;
  std::vector<int> fds;
  for (int i = 2; i < argc; i++) {
    int fd = openPort(argv[i]);
    if (fd < 0) {
      std::fprintf(stderr, "lossy_switch: cannot open %s: %s\n", argv[i], std::strerror(errno));
      return 1;
    }
    fds.push_back(fd);
  }
  std::signal(SIGTERM, onSignal);
  std::signal(SIGINT, onSignal);
  std::signal(SIGUSR1, onArm);
  std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> dice(0.0, 1.0);
  std::vector<pollfd> pfd(fds.size());
  for (size_t i = 0; i < fds.size(); i++) pfd[i] = {fds[i], POLLIN, 0};
  static char buf[70000];
  unsigned long frames = 0, dropped = 0;
  while (!gStop) {
    if (poll(pfd.data(), pfd.size(), 200) <= 0) continue;
    for (size_t i = 0; i < fds.size(); i++) {
      if (!(pfd[i].revents & POLLIN)) continue;
      sockaddr_ll from{};
      socklen_t len = sizeof from;
      ssize_t n = recvfrom(fds[i], buf, sizeof buf, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &len);
      if (n <= 0 || from.sll_pkttype == PACKET_OUTGOING) continue;
      if (gArmed) frames++;  // counted once the loss is on
      if (gArmed && dice(rng) < drop) {
        dropped++;
        continue;
      }
      for (size_t j = 0; j < fds.size(); j++)
        if (j != i) send(fds[j], buf, size_t(n), MSG_DONTWAIT);
    }
  }
  std::printf("lossy_switch: %lu frames, %lu dropped\n", frames, dropped);
  return 0;
}
