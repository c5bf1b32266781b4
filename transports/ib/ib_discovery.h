// Finds the HCAs and ports of this machine through verbs (and sysfs for GID
// types). Never throws for "nothing there": that is a Discovery with no
// ports, and the decision (ib_select.h) turns it into a reason.
#pragma once

#include "transports/ib/ib_select.h"

namespace weft::ib {

Discovery discoverPorts();

}  // namespace weft::ib
