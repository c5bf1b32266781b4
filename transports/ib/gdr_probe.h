// Gathers the facts the GPUDirect RDMA decision (gdr_decision.h) needs for
// one rank: its GPU's support (CUDA driver), libibverbs' dma-buf entry
// point, the HCA driver's answer to a dma-buf registration, and the
// peer-memory module. The GPU-NIC distance comes from the caller (the
// topology). Never throws for "not there": that is a fact like any other.
#pragma once

#include <optional>
#include <string>

#include "transports/ib/gdr_decision.h"

namespace weft::ib {

struct Verbs;

// With the process's libibverbs (loadVerbs).
GdrFacts probeGdr(const std::string& ibDev, int port, int cudaDev, std::optional<PciDistance> distance);
// With a given verbs table (null: libibverbs could not be loaded).
GdrFacts probeGdr(const Verbs* verbs, const std::string& ibDev, int port, int cudaDev,
                  std::optional<PciDistance> distance);

}  // namespace weft::ib
