// The transports a communicator may use, in the order it prefers them, and
// the choice among them for one pair of ranks.
//
// Adding a transport: its folder (a Transport, transport.h) and one line in
// a list in registry.cc. The core asks each listed transport, in order,
// whether it can join a pair (Transport::canConnect, over the facts every
// rank published at init) and uses the first that can.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transports/transport.h"

namespace weft {

struct TransportEntry {
  const char* name;  // as its Transport::name() says it; WEFT_NET names network ones
  bool network;      // joins ranks of different hosts: WEFT_NET may force it
  // Slower than what a pair of hosts could have: choosing it between hosts
  // unasked is worth a warning.
  bool lastResort;
  std::unique_ptr<Transport> (*make)();
};

// Host-buffer traffic: same host first, then the networks, fastest first.
const std::vector<TransportEntry>& hostTransportList();
// Device-buffer traffic with FIFOs of its own in GPU memory. Tried first;
// then the device transport of the pair's host transport
// (Transport::deviceTransport); when neither can, device traffic uses the
// pair's host FIFO, mapped for the GPU.
const std::vector<TransportEntry>& deviceTransportList();

// "Socket or IB": the values WEFT_NET / config.netName take.
std::string networkTransportNames();
// Whether `name` (any case) names a network transport.
bool isNetworkTransport(const std::string& name);

// One communicator's transports, made from the lists at init; each gets its
// own row of PeerInfo facts.
class TransportSet {
 public:
  struct Member {
    const TransportEntry* entry;
    std::unique_ptr<Transport> transport;
  };

  TransportSet();
  // Every transport's facts about this rank into self (before the
  // all-gather of PeerInfo).
  void publishFacts(int rank, int cudaDev, PeerInfo& self);

  const std::vector<Member>& host() const { return host_; }
  const std::vector<Member>& device() const { return device_; }

 private:
  std::vector<Member> host_;
  std::vector<Member> device_;
};

// The choice among `list` for one pair. Pure, so both ends reach it alike.
struct TransportChoice {
  int index = -1;  // into the list; -1: none can join the pair
  // The reasons of the ones before it that could not, then its own
  // ("hosts differ, no usable IB on rank 3").
  std::string why;
  bool warnFallback = false;  // a last resort between hosts that WEFT_NET did not ask for
  bool impossible = false;    // WEFT_NET names a transport that cannot join the pair
  const char* forced = "";    // the listed name of the transport WEFT_NET names ("" none)
};

// canConnect(i, &why): what list[i] says of the pair (asked in order, only
// until one can). forcedNet: WEFT_NET, "" when not set: network transports
// it does not name are passed over.
TransportChoice chooseTransport(const std::vector<TransportEntry>& list, const std::string& forcedNet,
                                const std::function<bool(size_t, std::string*)>& canConnect);

}  // namespace weft
