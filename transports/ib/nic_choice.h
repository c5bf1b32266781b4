// Which IB ports (NICs) one rank's connections use, and in which order over
// its channels. Pure: the ports, their distances from the rank and the
// rank's place among the ranks of its host come in; the choice and a reason
// worth logging come out.
//
// The closest ports win: distance on the PCI tree from the rank's GPU, or,
// for a rank without a GPU, from the NUMA node it runs on. Among the ports
// at the closest distance only the fastest of the closest's link layer are
// kept (a rank never mixes IB and RoCE, and a slow rail would hold back the
// channels on it). Ranks of a host that share those ports spread over them
// by local rank; one rank may use several of them (rails), channel c on
// rails[c % rails.size()], up to WEFT_IB_MAX_NICS.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "transports/ib/gdr_decision.h"
#include "transports/ib/ib_select.h"

namespace weft::ib {

struct NicCandidate {
  std::string name;  // "mlx5_0:1", for the reason text
  LinkLayer linkLayer = LinkLayer::Unknown;
  int speedMbps = 0;
  std::optional<PciDistance> distance;  // nullopt: the topology cannot tell (ranked after SYS)
};

struct NicChoiceInput {
  std::vector<NicCandidate> ports;  // the usable ports, in the decision's order (fastest first)
  std::string locality;             // "GPU 1", "NUMA node 0", ...: whose distances these are
  int localRank = 0;                // the rank's index among the ranks of its host
  int maxNics = 0;                  // WEFT_IB_MAX_NICS; 0: every port of the closest set
};

struct NicChoice {
  std::vector<int> rails;  // indices into NicChoiceInput::ports; rails[0] is the primary port
  LinkLayer linkLayer = LinkLayer::Unknown;  // of every rail
  std::string reason;
};

// Throws weftInvalidArgument for no ports, a negative local rank or cap.
NicChoice chooseNics(const NicChoiceInput& in);

// The port index (into NicChoiceInput::ports) of channel `conn`.
int nicForChannel(const NicChoice& choice, int conn);

}  // namespace weft::ib
