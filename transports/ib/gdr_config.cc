#include "transports/ib/gdr_config.h"

#include "src/util/env.h"

namespace weft::ib {

GdrSettings readGdrSettings() {
  GdrSettings s;
  s.disabled = envBool("WEFT_GDR_DISABLE", false);
  s.dmabufEnabled = envBool("WEFT_DMABUF_ENABLE", true);
  s.flushDisabled = envBool("WEFT_GDR_FLUSH_DISABLE", false);
  if (auto level = envString("WEFT_NET_GDR_LEVEL")) {
    s.maxDistance = parseGdrLevel(*level);
    s.levelSet = true;
  }
  return s;
}

}  // namespace weft::ib
