#include "transports/ib/ib_facts.h"

#include <cstdarg>
#include <cstdio>

#include "transports/ib/gid_select.h"

namespace weft::ib {

LinkLayer linkLayerFromFacts(int32_t code) {
  return code >= 1 && code <= 3 ? static_cast<LinkLayer>(code - 1) : LinkLayer::Unknown;
}

bool ibCanJoin(bool selfUsable, const std::string& selfProblem, bool peerUsable, int peer, std::string* why,
               LinkLayer selfLink, LinkLayer peerLink) {
  const bool linksDiffer = selfLink != LinkLayer::Unknown && peerLink != LinkLayer::Unknown && selfLink != peerLink;
  if (!selfUsable)
    *why = "no usable IB on this rank: " + selfProblem;
  else if (!peerUsable)
    *why = "no usable IB on rank " + std::to_string(peer);
  else if (linksDiffer)
    *why = std::string("IB link layers differ (") + linkLayerName(selfLink) + " here, " + linkLayerName(peerLink) +
           " on rank " + std::to_string(peer) + ")";
  else
    *why = "IB on both ends";
  return selfUsable && peerUsable && !linksDiffer;
}

bool ibFactsJoin(const IbFacts& self, const std::string& selfProblem, const IbFacts& peer, int peerRank,
                 std::string* why) {
  return ibCanJoin(self.usable != 0, selfProblem, peer.usable != 0, peerRank, why, linkLayerFromFacts(self.linkLayer),
                   linkLayerFromFacts(peer.linkLayer));
}

bool gdrCanJoin(bool selfGdr, bool peerGdr, std::string* why) {
  if (selfGdr && peerGdr)
    *why = "GPU Direct RDMA at both ends";
  else if (selfGdr)
    *why = "GPU Direct RDMA at this end";
  else if (peerGdr)
    *why = "GPU Direct RDMA at the peer's end";
  else
    *why = "no GPU Direct RDMA at either end";
  return selfGdr || peerGdr;
}

LinkLayer linkLayerOfVerbsCode(uint8_t code) {
  switch (code) {
    case 0:  // IBV_LINK_LAYER_UNSPECIFIED: drivers older than link-layer reporting were IB
    case 1: return LinkLayer::InfiniBand;  // IBV_LINK_LAYER_INFINIBAND
    case 2: return LinkLayer::Ethernet;    // IBV_LINK_LAYER_ETHERNET
    default: return LinkLayer::Unknown;
  }
}

std::string portStateName(const std::string& verbsText) {
  return verbsText.rfind("PORT_", 0) == 0 ? verbsText.substr(5) : verbsText;
}

int gidEntriesToRead(int gidTableLength) { return gidTableLength < 256 ? gidTableLength : 256; }

GidType gidTypeFromWire(uint8_t code) {
  return code >= 1 && code <= 3 ? static_cast<GidType>(code - 1) : GidType::Unknown;
}

namespace {

std::string printed(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string printed(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

ConnInfoRefusal refused(weftResult_t code, std::string why) { return ConnInfoRefusal{code, std::move(why)}; }

}  // namespace

ConnInfoRefusal connInfoMismatch(const ConnInfo& mine, const ConnInfo& remote, ConnRole wantRole, int peer, int self,
                                 LinkLayer localLink, int pkeyIndex) {
  if (const std::string bad = connInfoPeerProblem(remote, wantRole, peer, self); !bad.empty())
    return refused(weftRemoteError, "refused what the peer sent: " + bad);
  if (!remote.usable) return refused(weftRemoteError, "the peer has no usable IB port");
  if (remote.nQps != mine.nQps)
    return refused(weftInvalidUsage, printed("WEFT_IB_QPS_PER_CONNECTION differs (%u here, %u on the peer)", mine.nQps,
                                             remote.nQps));
  if (remote.nSlots != mine.nSlots || remote.slotBytes != mine.slotBytes)
    return refused(weftInvalidUsage, printed("FIFO geometry differs (%u x %lu here, %u x %lu on the peer)", mine.nSlots,
                                             static_cast<unsigned long>(mine.slotBytes), remote.nSlots,
                                             static_cast<unsigned long>(remote.slotBytes)));
  if (remote.linkLayer != mine.linkLayer)
    return refused(weftInvalidUsage, printed("link layers differ (%s here, the peer's is code %u)",
                                             linkLayerName(localLink), remote.linkLayer));
  const std::string partition = partitionProblem(mine.pkey, remote.pkey);
  if (!partition.empty())
    return refused(weftInvalidUsage,
                   partition + printed(": the QPs could not reach each other (WEFT_IB_PKEY=%d here; check the "
                                       "partition configuration of both hosts)", pkeyIndex));
  const bool roce = localLink == LinkLayer::Ethernet;
  auto address = [](const ConnInfo& c) { return GidAddress{c.gid, gidTypeFromWire(c.gidType), c.subnetPrefix}; };
  const std::string why = gidPairProblem(roce, address(mine), address(remote));
  if (!why.empty())
    return refused(weftInvalidUsage,
                   std::string(roce ? "RoCE" : "IB") + " GIDs cannot reach each other: " + why + " (" +
                       (roce ? "make both ends choose the same kind: WEFT_IB_ROCE_VERSION, WEFT_IB_ADDR_FAMILY, "
                               "WEFT_IB_ADDR_RANGE or WEFT_IB_GID_INDEX"
                             : "check the subnet managers and routers") + ")");
  return {};
}

}  // namespace weft::ib
