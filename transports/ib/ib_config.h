// The WEFT_IB_* settings, read and range-checked in one place.
#pragma once

#include <string>

namespace weft::ib {

struct IbConfig {
  bool disable = false;        // WEFT_IB_DISABLE
  std::string hca;             // WEFT_IB_HCA
  int gidIndex = -1;           // WEFT_IB_GID_INDEX, -1: auto
  int trafficClass = 0;        // WEFT_IB_TC (RoCE: GRH traffic class, DSCP << 2)
  int serviceLevel = 0;        // WEFT_IB_SL
  int timeout = 20;            // WEFT_IB_TIMEOUT: local ack timeout 4.096us * 2^t
  int retryCount = 7;          // WEFT_IB_RETRY_CNT
  int qpsPerConnection = 1;    // WEFT_IB_QPS_PER_CONNECTION
};

// Throws weftInvalidArgument naming the variable and its allowed range.
void validateIbConfig(const IbConfig& c);
IbConfig readIbConfig();

}  // namespace weft::ib
