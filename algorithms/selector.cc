#include "algorithms/selector.h"

#include <cctype>
#include <limits>
#include <sstream>

#include "src/util/error.h"

namespace weft::algo {

AlgoFilter::AlgoFilter() {
  for (auto& row : allowed) row.fill(true);
}

namespace {

std::string lower(std::string s) {
  for (auto& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

int collIndex(const std::string& name) {
  const char* names[] = {"allreduce", "reducescatter", "allgather", "broadcast", "reduce", "sendrecv", "alltoall"};
  for (int i = 0; i < 7; i++)
    if (name == names[i]) return i;
  raise(weftInvalidArgument, "WEFT_ALGO: unknown collective '%s'", name.c_str());
}

// The algorithms a list allows: names, or all but the names after '^'.
std::array<bool, kNumAlgos> parseList(const std::string& listIn) {
  std::string list = trim(listIn);
  bool exclude = !list.empty() && list[0] == '^';
  if (exclude) list = list.substr(1);
  std::array<bool, kNumAlgos> named{};
  std::stringstream ss(list);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    tok = lower(trim(tok));
    if (tok.empty()) continue;
    bool found = false;
    for (int a = 0; a < kNumAlgos; a++)
      if (tok == algoName(Algo(a))) named[a] = found = true;
    if (!found) raise(weftInvalidArgument, "WEFT_ALGO: unknown algorithm '%s'", tok.c_str());
  }
  if (exclude)
    for (auto& v : named) v = !v;
  return named;
}

}  // namespace

AlgoFilter parseAlgoFilter(const std::string& spec) {
  AlgoFilter f;
  if (trim(spec).empty()) return f;
  std::stringstream ss(spec);
  std::string part;
  std::array<bool, 7> specific{};
  std::array<bool, kNumAlgos> general;
  general.fill(true);
  while (std::getline(ss, part, ';')) {
    part = trim(part);
    if (part.empty()) continue;
    size_t colon = part.find(':');
    if (colon == std::string::npos) {
      general = parseList(part);
    } else {
      int c = collIndex(lower(trim(part.substr(0, colon))));
      f.allowed[c] = parseList(part.substr(colon + 1));
      specific[c] = true;
    }
  }
  for (int c = 0; c < 7; c++) {
    if (specific[c]) continue;
    f.allowed[c] = general;
    bool implementable = false, allowedOne = false;
    for (int a = 0; a < kNumAlgos; a++) {
      const bool supports = algoSupports(Algo(a), plan::Coll(c));
      implementable |= supports;
      allowedOne |= supports && general[a];
    }
    if (implementable && !allowedOne) {
      f.allowed[c].fill(true);
      f.generalIgnored[c] = true;
    }
  }
  return f;
}

std::string ignoredCollectives(const AlgoFilter& f) {
  std::string out;
  for (int c = 0; c < 7; c++)
    if (f.generalIgnored[c]) {
      if (!out.empty()) out += ", ";
      out += plan::collName(plan::Coll(c));
    }
  return out;
}

Algo selectAlgo(plan::Coll c, const CostInputs& in, const AlgoFilter& f) {
  double best = std::numeric_limits<double>::infinity();
  int pick = -1;
  for (int a = 0; a < kNumAlgos; a++) {
    if (!f.allowed[int(c)][a] || !algoSupports(Algo(a), c)) continue;
    double t = estimateUs(c, Algo(a), in);
    if (t < best) best = t, pick = a;
  }
  if (pick < 0) raise(weftInvalidUsage, "WEFT_ALGO allows no algorithm that implements %s", plan::collName(c));
  return Algo(pick);
}

CallChoice selectCall(plan::Coll c, const CostInputs& in, const AlgoFilter& f, const plan::FifoGeometry& g) {
  CallChoice choice;
  choice.algo = selectAlgo(c, in, f);
  choice.shape = shapeCall(c, choice.algo, in, g);
  return choice;
}

}  // namespace weft::algo
