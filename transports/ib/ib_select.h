// Whether this process uses IB, and on which port; or why it falls back to
// sockets. Pure: takes what discovery found (or failed to find) and returns
// a decision with a reason worth printing. Also the WEFT_IB_* settings
// that steer it and the connections.
#pragma once

#include <string>
#include <vector>

#include "transports/ib/gid_select.h"
#include "transports/ib/ib_hca_filter.h"

namespace weft::ib {

enum class LinkLayer { InfiniBand, Ethernet, Unknown };

const char* linkLayerName(LinkLayer l);  // "IB", "RoCE", "unknown"

// One port as discovery saw it.
struct PortState {
  std::string dev;
  int port = 1;
  bool active = false;
  std::string stateName;  // "ACTIVE", "DOWN", ... for the reason text
  LinkLayer linkLayer = LinkLayer::Unknown;
  int speedMbps = 0;
  std::vector<GidEntry> gids;
};

struct Discovery {
  bool verbsLoaded = false;
  std::string loadError;  // why libibverbs could not be loaded
  std::vector<PortState> ports;
};

struct Decision {
  bool useIb = false;
  std::string reason;          // fallback reason, or a summary of the choice
  std::vector<PortState> usable;  // usable ports, fastest first
  std::vector<GidChoice> gid;     // gid[i] for usable[i]
};

// Port speed from ibv_port_attr's active_speed and active_width codes (the
// IBTA encodings: speed 1 SDR .. 128 NDR, 256 XDR; width 1=1x, 2=4x, 4=8x,
// 8=12x, 16=2x). Unknown codes count as SDR / 1x, never 0.
int portSpeedMbps(unsigned activeSpeed, unsigned activeWidth);

// Order of the checks, and so of the reason reported: WEFT_IB_DISABLE,
// libibverbs missing, no device, every port filtered by WEFT_IB_HCA, every
// remaining port not ACTIVE (or of unknown link layer), no usable GID.
Decision decide(const Discovery& found, const HcaFilter& filter, bool disabled, int forcedGidIndex,
                const GidFilter& gidFilter = GidFilter{});

// The WEFT_IB_* settings, read and range-checked in one place.
struct IbConfig {
  bool disable = false;        // WEFT_IB_DISABLE
  std::string hca;             // WEFT_IB_HCA
  int gidIndex = -1;           // WEFT_IB_GID_INDEX, -1: auto
  int trafficClass = 0;        // WEFT_IB_TC (RoCE: GRH traffic class, DSCP << 2)
  int serviceLevel = 0;        // WEFT_IB_SL
  int timeout = 20;            // WEFT_IB_TIMEOUT: local ack timeout 4.096us * 2^t
  int retryCount = 7;          // WEFT_IB_RETRY_CNT
  int qpsPerConnection = 1;    // WEFT_IB_QPS_PER_CONNECTION
  int maxNics = 0;             // WEFT_IB_MAX_NICS, 0: every port of the closest set (nic_choice.h)
  int roceVersion = 0;         // WEFT_IB_ROCE_VERSION: 0 any, 1, 2
  std::string addrFamily;      // WEFT_IB_ADDR_FAMILY: "", AF_INET, AF_INET6
  std::string addrRange;       // WEFT_IB_ADDR_RANGE: "", "10.0.0.0/8", "fd00::/8"
  int pkeyIndex = 0;           // WEFT_IB_PKEY: index into the port's partition key table
  GidFilter gidFilter() const;  // the three filters above, parsed
};

// Throws weftInvalidArgument naming the variable and its allowed range.
void validateIbConfig(const IbConfig& c);
IbConfig readIbConfig();

}  // namespace weft::ib
