#include "transports/ib/ib_config.h"

#include "src/util/env.h"
#include "src/util/error.h"
#include "transports/ib/conn_info.h"

namespace weft::ib {

namespace {

void checkRange(const char* name, int v, int lo, int hi) {
  if (v < lo || v > hi) raise(weftInvalidArgument, "%s=%d is out of range %d..%d", name, v, lo, hi);
}

}  // namespace

void validateIbConfig(const IbConfig& c) {
  checkRange("WEFT_IB_GID_INDEX", c.gidIndex, -1, 255);
  checkRange("WEFT_IB_TC", c.trafficClass, 0, 255);
  checkRange("WEFT_IB_SL", c.serviceLevel, 0, 15);
  // 0 would mean "wait forever" to the HCA: a dead peer must become an
  // error, never a hang, so it is refused.
  checkRange("WEFT_IB_TIMEOUT", c.timeout, 1, 31);
  checkRange("WEFT_IB_RETRY_CNT", c.retryCount, 0, 7);
  checkRange("WEFT_IB_QPS_PER_CONNECTION", c.qpsPerConnection, 1, static_cast<int>(kIbMaxQps));
}

IbConfig readIbConfig() {
  IbConfig c;
  c.disable = envBool("WEFT_IB_DISABLE", false);
  c.hca = envString("WEFT_IB_HCA").value_or("");
  c.gidIndex = static_cast<int>(envInt("WEFT_IB_GID_INDEX", -1));
  c.trafficClass = static_cast<int>(envInt("WEFT_IB_TC", 0));
  c.serviceLevel = static_cast<int>(envInt("WEFT_IB_SL", 0));
  c.timeout = static_cast<int>(envInt("WEFT_IB_TIMEOUT", 20));
  c.retryCount = static_cast<int>(envInt("WEFT_IB_RETRY_CNT", 7));
  c.qpsPerConnection = static_cast<int>(envInt("WEFT_IB_QPS_PER_CONNECTION", 1));
  validateIbConfig(c);
  return c;
}

}  // namespace weft::ib
