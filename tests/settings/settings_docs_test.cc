// docs/environment.md against the settings table: every declared variable
// has a row whose default is the table's, a row naming a variable's NCCL
// name (`WEFT_X` / `NCCL_X`) names the table's, and the page names no
// variable the table does not declare.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "src/util/settings.h"

namespace weft::settings {
namespace {

struct Row {
  int line;
  std::vector<std::string> names;
  std::vector<std::string> ncclNames;  // NCCL_ names in the first cell
  std::string defaultCell;  // backquotes removed, trimmed
};

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line.substr(1));
  std::string cell;
  while (std::getline(in, cell, '|')) out.push_back(trim(cell));
  return out;
}

std::string page() {
  std::ifstream in(std::string(WEFT_SOURCE_DIR) + "/docs/environment.md");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Table rows whose first cell names WEFT_ variables; every such table has
// the default in its second column.
std::vector<Row> rows(const std::string& text) {
  static const std::regex name("`(WEFT_[A-Z0-9_]+)`"), ncclName("`(NCCL_[A-Z0-9_]+)`");
  std::vector<Row> out;
  std::stringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); n++) {
    if (line.rfind("| `WEFT_", 0) != 0) continue;
    std::vector<std::string> c = cells(line);
    Row r{n, {}, {}, c.size() > 1 ? c[1] : ""};
    for (std::sregex_iterator it(c[0].begin(), c[0].end(), name), end; it != end; ++it) r.names.push_back((*it)[1]);
    for (std::sregex_iterator it(c[0].begin(), c[0].end(), ncclName), end; it != end; ++it)
      r.ncclNames.push_back((*it)[1]);
    r.defaultCell.erase(std::remove(r.defaultCell.begin(), r.defaultCell.end(), '`'), r.defaultCell.end());
    out.push_back(r);
  }
  return out;
}

// "4M (per ...)", "unset: detect", "0" all show the default 4M, unset, 0.
bool showsDefault(const std::string& cell, const std::string& want) {
  if (cell.rfind(want, 0) != 0) return false;
  return cell.size() == want.size() || std::string(" :,(").find(cell[want.size()]) != std::string::npos;
}

TEST(SettingsDocs, EveryDeclaredVariableIsDocumentedWithItsDefault) {
  const std::string text = page();
  ASSERT_FALSE(text.empty()) << "docs/environment.md not found under " << WEFT_SOURCE_DIR;
  std::map<std::string, int> documented;
  for (const Row& r : rows(text)) {
    for (const std::string& n : r.names) {
      documented[n]++;
      const Info* i = find(n);
      if (!i) continue;  // reported below
      const std::string want = i->defaultValue ? i->defaultValue : "unset";
      EXPECT_TRUE(showsDefault(r.defaultCell, want))
          << "docs/environment.md line " << r.line << ": " << n << " default is '" << r.defaultCell
          << "', the table (src/util/settings_table.h) says '" << want << "'";
    }
  }
  for (const Info& i : all()) EXPECT_TRUE(documented.count(i.name)) << i.name << " has no row in docs/environment.md";
}

TEST(SettingsDocs, NcclNamesAreInTheirTwinsRows) {
  std::set<std::string> shown;  // "WEFT_X NCCL_X" pairs that share a row
  for (const Row& r : rows(page())) {
    for (const std::string& n : r.ncclNames) {
      bool twin = false;
      for (const std::string& w : r.names)
        if (const Info* i = find(w); i && i->ncclName && n == i->ncclName) twin = true;
      EXPECT_TRUE(twin) << "docs/environment.md line " << r.line << " names " << n
                        << ", which the table (src/util/settings_table.h) gives none of the row's variables";
      for (const std::string& w : r.names) shown.insert(w + " " + n);
    }
  }
  for (const Info& i : all())
    if (i.ncclName)
      EXPECT_TRUE(shown.count(std::string(i.name) + " " + i.ncclName))
          << i.name << "'s NCCL name " << i.ncclName << " is not in its docs/environment.md row ('`" << i.name
          << "` / `" << i.ncclName << "`')";
}

TEST(SettingsDocs, PageNamesOnlyDeclaredVariables) {
  // A name, or a family written WEFT_TUNE_* that some declared name starts.
  static const std::regex name("WEFT_[A-Z0-9_]*[A-Z0-9](_\\*)?");
  const std::string text = page();
  std::set<std::string> unknown;
  for (std::sregex_iterator it(text.begin(), text.end(), name), end; it != end; ++it) {
    const std::string n = it->str();
    bool known = find(n) != nullptr;
    if (n.back() == '*')
      for (const Info& i : all()) known |= std::string(i.name).rfind(n.substr(0, n.size() - 1), 0) == 0;
    if (!known) unknown.insert(n);
  }
  for (const std::string& n : unknown) ADD_FAILURE() << "docs/environment.md names " << n << ", which is not declared";
}

}  // namespace
}  // namespace weft::settings
