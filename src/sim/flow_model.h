// weft-sim's network model: runs every rank's real plan (the algorithm
// registry's builders) over a cluster description and returns the time the
// call takes.
//
// The model, first cut:
//  - each transfer (one send of a step, matched with the receiving step in
//    FIFO order per (sender, receiver, connection)) occupies a sender port
//    and a receiver port for bytes / bandwidth: inside a host the ranks' own
//    links, across hosts the NICs (rank -> NIC by local index modulo the
//    host's NIC count); ports serve transfers first come, first served;
//  - a transfer reaches the receiver one link latency after it is pushed;
//  - a step that receives and sends (a fused ring or tree step) starts
//    sending once the first piece (the plan's slice) of its input arrived,
//    and finishes no earlier than one piece after its input: the pipelining
//    of the real executors;
//  - FIFOs hold any amount (no back-pressure), local copies and reductions
//    cost a fixed per-step overhead only.
// Deterministic: the same inputs give the same times.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/plan.h"

namespace weft::sim {

struct Cluster {
  std::vector<int> hostOf;  // per rank: its host index (0..hosts-1)
  double intraGBs = 100;    // each rank's link inside its host, per direction (GB/s)
  double intraLatUs = 1;
  double nicGBs = 12.5;     // each NIC, per direction
  double netLatUs = 5;
  int nicsPerHost = 1;
  double stepOverheadUs = 0;  // per step a rank runs
};

struct RunStats {
  double us = 0;          // when the last rank finished
  uint64_t steps = 0;
  uint64_t netBytes = 0;  // bytes that crossed a NIC
};

// plans[r] is rank r's plan of one call. Throws weftInvalidArgument when the
// plans do not describe one call on this cluster (rank counts, unpaired
// transfers).
RunStats simulate(const std::vector<plan::Plan>& plans, const Cluster& c);

}  // namespace weft::sim
