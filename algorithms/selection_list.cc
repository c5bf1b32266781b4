#include "algorithms/selection_list.h"

#include <cctype>
#include <sstream>

#include "src/util/error.h"

namespace weft::algo {
namespace {

std::string lower(std::string s) {
  for (auto& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

NameSet all(int count) {
  NameSet s;
  for (int i = 0; i < count; i++) s.set(size_t(i));
  return s;
}

// The entries a list allows: names, or all but the names after '^'.
NameSet parseList(const std::string& listIn, const char* variable, const char* what, int count,
                  const NameLookup& lookup) {
  std::string list = trim(listIn);
  bool exclude = !list.empty() && list[0] == '^';
  if (exclude) list = list.substr(1);
  NameSet named;
  std::stringstream ss(list);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    tok = lower(trim(tok));
    if (tok.empty()) continue;
    const int i = lookup(tok);
    if (i == kUnknownName) raise(weftInvalidArgument, "%s: unknown %s '%s'", variable, what, tok.c_str());
    if (i >= 0) named.set(size_t(i));
  }
  return exclude ? all(count) & ~named : named;
}

}  // namespace

SelectionList parseSelectionList(const std::string& spec, const char* variable, const char* what, int count,
                                 const NameLookup& lookup) {
  SelectionList out;
  out.general = all(count);
  std::stringstream ss(spec);
  std::string part;
  while (std::getline(ss, part, ';')) {
    part = trim(part);
    if (part.empty()) continue;
    size_t colon = part.find(':');
    if (colon == std::string::npos) {
      out.general = parseList(part, variable, what, count, lookup);
      continue;
    }
    const std::string name = trim(part.substr(0, colon));
    std::optional<plan::Coll> c = plan::parseColl(name);
    if (!c) raise(weftInvalidArgument, "%s: unknown collective '%s'", variable, lower(name).c_str());
    out.allowed[static_cast<int>(*c)] = parseList(part.substr(colon + 1), variable, what, count, lookup);
    out.specific[static_cast<int>(*c)] = true;
  }
  for (int c = 0; c < plan::kNumColls; c++)
    if (!out.specific[c]) out.allowed[c] = out.general;
  return out;
}

}  // namespace weft::algo
