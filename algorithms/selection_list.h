// NCCL-style selection lists, as WEFT_ALGO and WEFT_PROTO take them: a list
// of names ("ring,tree"), or an exclusion list ("^tree"), optionally per
// collective after a ';' ("ring;allreduce:tree,ring"). A collective without
// its own entry uses the general list. One parser for every such variable.
#pragma once

#include <array>
#include <bitset>
#include <functional>
#include <string>

#include "algorithms/collectives.h"

namespace weft::algo {

// Registry indices (algorithms or protocols) a list allows.
using NameSet = std::bitset<64>;

// What a name means to the registry the list selects from.
constexpr int kUnknownName = -1;     // an error
constexpr int kNameNotHere = -2;     // a known name that this build does not have:
                                     // accepted, selects nothing
using NameLookup = std::function<int(const std::string& lowerCaseName)>;

struct SelectionList {
  std::array<NameSet, plan::kNumColls> allowed;  // per collective
  std::array<bool, plan::kNumColls> specific{};  // the collective had its own entry
  NameSet general;                               // the general list (all when none)
};

// `variable` ("WEFT_ALGO") and `what` ("algorithm") name the problem in
// errors: weftInvalidArgument naming an unknown collective or name.
// `count` entries exist; an empty spec allows all of them.
SelectionList parseSelectionList(const std::string& spec, const char* variable, const char* what, int count,
                                 const NameLookup& lookup);

}  // namespace weft::algo
