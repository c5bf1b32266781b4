// WEFT_* variables are read in one place: src/util/settings.cc, through the
// table. This test fails on a direct read (getenv or the old env.h readers
// with a literal "WEFT_..." name) anywhere else, and on a quoted WEFT_ name
// in code that the table does not declare.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "src/util/settings.h"

namespace weft::settings {
namespace {

namespace fs = std::filesystem;

// Files allowed to read WEFT_* variables directly.
const std::map<std::string, std::string> kAllowed = {
    // The perf binaries and weft-tune link only the public library; they
    // read the launch variables (scope Launch) and WEFT_COMM_ID themselves.
    {"benchmarks/common/harness.cc", "launch"},
    {"tools/weft-tune/weft_tune.cc", "launch"},
};

bool isCode(const fs::path& p) {
  static const std::set<std::string> exts = {".cc", ".h", ".cu", ".cuh", ".c", ".cpp", ".hpp"};
  return exts.count(p.extension().string()) > 0;
}

std::map<std::string, std::string> codeFiles() {
  std::map<std::string, std::string> out;
  const fs::path root(WEFT_SOURCE_DIR);
  for (const char* dir : {"src", "algorithms", "transports", "bindings", "tools", "benchmarks", "include"}) {
    if (!fs::exists(root / dir)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      if (!e.is_regular_file() || !isCode(e.path())) continue;
      std::ifstream in(e.path());
      std::stringstream s;
      s << in.rdbuf();
      out[fs::relative(e.path(), root).string()] = s.str();
    }
  }
  return out;
}

TEST(SettingsReads, NoDirectReadOutsideTheTable) {
  static const std::regex read(R"(\b(getenv|secure_getenv|envString|envInt|envBool)\s*\(\s*"WEFT_)");
  const auto files = codeFiles();
  ASSERT_GT(files.size(), 50u) << "source tree not found under " << WEFT_SOURCE_DIR;
  std::set<std::string> reading;
  for (const auto& [path, text] : files)
    if (std::regex_search(text, read)) reading.insert(path);
  for (const std::string& path : reading)
    EXPECT_TRUE(kAllowed.count(path)) << path << " reads a WEFT_ variable directly: declare it in "
                                      << "src/util/settings_table.h and read it through settings.h";
  // An entry whose file no longer reads anything directly is stale.
  for (const auto& [path, why] : kAllowed)
    EXPECT_TRUE(reading.count(path)) << path << " no longer reads WEFT_ variables: drop it from kAllowed";
}

TEST(SettingsReads, EveryQuotedNameIsDeclared) {
  static const std::regex quoted("\"(WEFT_[A-Z0-9_]+)\"");
  for (const auto& [path, text] : codeFiles())
    for (std::sregex_iterator it(text.begin(), text.end(), quoted), end; it != end; ++it)
      EXPECT_TRUE(find((*it)[1].str())) << path << " names " << (*it)[1] << ", which the table does not declare";
}

}  // namespace
}  // namespace weft::settings
