// What the IB transport takes from outside the process, and its checks:
// the facts row a peer publishes in PeerInfo, the connection info a peer
// sends at connect (after conn_info.h's decoding), and the port attributes
// verbs and sysfs report. Pure, with no verbs.h: the fuzz target and the
// unit tests link it without libibverbs.
#pragma once

#include <cstdint>
#include <string>

#include "transports/ib/conn_info.h"
#include "transports/ib/ib_select.h"
#include "weft/weft.h"

namespace weft::ib {

// What a rank tells its peers about IB: its row of PeerInfo facts.
struct IbFacts {
  int32_t usable = 0;   // 1: this process has a usable IB/RoCE port
  int32_t gdrMode = 0;  // GdrMode of its device-buffer traffic over IB (0: staged)
  int32_t linkLayer = 0;  // 1 + LinkLayer of the port its connections use (0: none)
};

// A facts row's link-layer code as a LinkLayer: 1..3, anything else
// (a peer's row holds any value) Unknown.
LinkLayer linkLayerFromFacts(int32_t code);

// Whether IB joins two ranks, and why (not): when both have a usable port
// with the same link layer (an IB port cannot reach a RoCE one: the pair
// then falls back to another transport instead of failing at connect).
// selfProblem: why this rank has none. Pure.
bool ibCanJoin(bool selfUsable, const std::string& selfProblem, bool peerUsable, int peer, std::string* why,
               LinkLayer selfLink = LinkLayer::Unknown, LinkLayer peerLink = LinkLayer::Unknown);
// The same from two facts rows (what IbTransportBase::canConnect reads).
bool ibFactsJoin(const IbFacts& self, const std::string& selfProblem, const IbFacts& peer, int peerRank,
                 std::string* why);

// Whether the device-buffer traffic of a pair that IB joins gets IB
// connections of its own: when at least one end can do GPUDirect RDMA (the
// other end then stages, but the first still saves its copy over PCIe).
// The answer (not `why`, said from this end) is the same whichever end
// asks. Pure.
bool gdrCanJoin(bool selfGdr, bool peerGdr, std::string* why);

// ibv_port_attr's link_layer code (IBV_LINK_LAYER_*: 0 unspecified, 1
// InfiniBand, 2 Ethernet) as a LinkLayer; drivers older than link-layer
// reporting say 0 and were InfiniBand.
LinkLayer linkLayerOfVerbsCode(uint8_t code);
// ibv_port_state_str's text without its "PORT_" (the reason text already
// says it is a port).
std::string portStateName(const std::string& verbsText);
// How many GID table entries discovery reads (ibv_port_attr's gid_tbl_len,
// at most 256; none when the driver reports a negative length).
int gidEntriesToRead(int gidTableLength);

// Why the connection info a peer sent (already decoded) cannot connect to
// this end's, or code weftSuccess when it can. The checks, in order: made
// by `peer` for `self` with the opposite role and QP numbers a peer could
// own (connInfoPeerProblem), a usable port, the same QP count, FIFO
// geometry and link layer, partitions that can talk (pkeyIndex: this
// end's WEFT_IB_PKEY, for the message), GIDs that reach each other (as
// RoCE GIDs when localLink, this end's port, is Ethernet).
struct ConnInfoRefusal {
  weftResult_t code = weftSuccess;
  std::string why;  // the error text after "NET/IB: <where>: "
};
ConnInfoRefusal connInfoMismatch(const ConnInfo& mine, const ConnInfo& remote, ConnRole wantRole, int peer, int self,
                                 LinkLayer localLink, int pkeyIndex);

// A ConnInfo's GID type byte (1 + GidType, 0 unknown) as a GidType.
GidType gidTypeFromWire(uint8_t code);

}  // namespace weft::ib
