#include "algorithms/registry.h"

#include <cctype>
#include <vector>

#include "src/util/error.h"

namespace weft::algo {
namespace {

bool sameName(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// Built on first use, so that registrations from other static initialisers
// (tests) always come after the built-ins. Capacity is reserved up front:
// references handed out by algoInfo stay valid while others register.
std::vector<AlgoInfo>& table() {
  static std::vector<AlgoInfo> t = [] {
    std::vector<AlgoInfo> v;
    v.reserve(kMaxAlgos);
    for (AlgoInfo& a : builtinAlgos()) v.push_back(std::move(a));
    return v;
  }();
  return t;
}

}  // namespace

int algoCount() { return static_cast<int>(table().size()); }

const AlgoInfo& algoInfo(AlgoId a) { return table().at(size_t(index(a))); }

const char* algoName(AlgoId a) { return index(a) < algoCount() ? algoInfo(a).name.c_str() : "?"; }

bool algoSupports(AlgoId a, plan::Coll c) { return index(a) < algoCount() && algoInfo(a).implements(c); }

bool algoApplies(AlgoId a, plan::Coll c, const CostInputs& in) {
  return algoSupports(a, c) && (!algoInfo(a).applies || algoInfo(a).applies(c, in));
}

std::optional<AlgoId> findAlgo(std::string_view name) {
  for (int i = 0; i < algoCount(); i++)
    if (sameName(table()[size_t(i)].name, name)) return AlgoId(i);
  return std::nullopt;
}

AlgoId registerAlgo(AlgoInfo info) {
  if (info.name.empty()) raise(weftInvalidArgument, "registerAlgo: an algorithm needs a name");
  if (findAlgo(info.name)) raise(weftInvalidArgument, "registerAlgo: '%s' is registered already", info.name.c_str());
  if (!info.build || !info.cost)
    raise(weftInvalidArgument, "registerAlgo: '%s' needs a plan builder and a cost function", info.name.c_str());
  std::vector<AlgoInfo>& t = table();
  if (t.size() >= size_t(kMaxAlgos))
    raise(weftInvalidArgument, "registerAlgo: '%s': the registry holds at most %d algorithms", info.name.c_str(),
          kMaxAlgos);
  t.push_back(std::move(info));
  return AlgoId(t.size() - 1);
}

}  // namespace weft::algo
