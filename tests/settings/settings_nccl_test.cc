// NCCL names of settings (NCCL_BUFFSIZE for WEFT_BUFFSIZE): off unless a
// process enables them; then each sits just below its WEFT twin, in the
// environment and in /etc/nccl.conf, ~/.nccl.conf (below the weft files).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <set>
#include <string>

#include "src/util/error.h"
#include "src/util/settings.h"

namespace weft::settings {
namespace {

namespace fs = std::filesystem;

class NcclNames : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/weft-nccl-names-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    weftSystem_ = dir_ + "/weft-system.conf";
    weftUser_ = dir_ + "/weft-user.conf";
    ncclSystem_ = dir_ + "/nccl-system.conf";
    ncclUser_ = dir_ + "/nccl-user.conf";
    setFilePathsForTesting(std::vector<std::string>{weftSystem_, weftUser_});
    setNcclFilePathsForTesting(std::vector<std::string>{ncclSystem_, ncclUser_});
    for (const char* name : kTouched) unsetenv(name);
    enableNcclNames(true);
  }
  void TearDown() override {
    enableNcclNames(false);
    for (const char* name : kTouched) unsetenv(name);
    setFilePathsForTesting(std::nullopt);
    setNcclFilePathsForTesting(std::nullopt);
    fs::remove_all(dir_);
  }
  void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
  static std::string errorOf(const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), weftInvalidArgument);
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
  }

  static constexpr const char* kTouched[] = {"WEFT_BUFFSIZE", "NCCL_BUFFSIZE", "WEFT_ALGO",       "NCCL_ALGO",
                                             "NCCL_IB_DISABLE", "WEFT_IB_DISABLE", "NCCL_NTHREADS", "NCCL_NSLOTS",
                                             "NCCL_MAX_NCHANNELS"};
  std::string dir_, weftSystem_, weftUser_, ncclSystem_, ncclUser_;
};

TEST(NcclNamesTable, NamesAreUniqueAndStartWithNccl) {
  std::set<std::string> names;
  int aliased = 0;
  for (const Info& i : all()) {
    if (!i.ncclName) continue;
    aliased++;
    EXPECT_TRUE(names.insert(i.ncclName).second) << i.ncclName << " given to two rows";
    EXPECT_EQ(std::string(i.ncclName).rfind("NCCL_", 0), 0u) << i.ncclName;
    EXPECT_NE(i.scope, Scope::Launch) << i.name << ": launch variables are weft's own";
    EXPECT_EQ(findNccl(i.ncclName), &i);
  }
  // The names operators set most often are all there.
  for (const char* n : {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE", "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA",
                        "NCCL_IB_GID_INDEX", "NCCL_IB_TIMEOUT", "NCCL_IB_RETRY_CNT", "NCCL_IB_TC", "NCCL_IB_SL",
                        "NCCL_IB_DISABLE", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_ALGO", "NCCL_PROTO",
                        "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_BUFFSIZE", "NCCL_TOPO_FILE", "NCCL_COMM_ID"})
    EXPECT_NE(findNccl(n), nullptr) << n;
  EXPECT_GE(aliased, 20);
}

TEST_F(NcclNames, IgnoredUnlessEnabled) {
  setenv("NCCL_BUFFSIZE", "8M", 1);
  write(ncclSystem_, "NCCL_ALGO=ring\n");
  enableNcclNames(false);
  Config c = Config::read();
  EXPECT_EQ(c.get(kBuffsize), 4 << 20);
  EXPECT_FALSE(c.get(kAlgo).has_value());
  EXPECT_EQ(get(kBuffsize), 4 << 20);
  enableNcclNames(true);
  EXPECT_EQ(Config::read().get(kBuffsize), 8 << 20);
  EXPECT_EQ(get(kBuffsize), 8 << 20);  // the process-wide reader too
}

TEST_F(NcclNames, WeftNameWinsOverNcclNameInTheEnvironment) {
  setenv("NCCL_BUFFSIZE", "8M", 1);
  Config c = Config::read();
  EXPECT_EQ(c.get(kBuffsize), 8 << 20);
  EXPECT_EQ(c.value(Id::kBuffsize).source.describe(), "NCCL_BUFFSIZE in the environment");
  setenv("WEFT_BUFFSIZE", "2M", 1);
  c = Config::read();
  EXPECT_EQ(c.get(kBuffsize), 2 << 20);
  EXPECT_EQ(c.value(Id::kBuffsize).source.describe(), "environment");
}

TEST_F(NcclNames, NcclConfFilesAreReadBelowWeftFilesAndTheEnvironment) {
  write(ncclSystem_, "NCCL_ALGO=tree\nNCCL_BUFFSIZE=1M\nNCCL_IB_DISABLE=1\n");
  write(ncclUser_, "# user\nNCCL_ALGO=ring\n");
  Config c = Config::read();
  EXPECT_EQ(c.get(kAlgo).value_or(""), "ring");  // ~/.nccl.conf over /etc/nccl.conf
  EXPECT_EQ(c.value(Id::kAlgo).source.describe(), "NCCL_ALGO in " + ncclUser_ + " line 2");
  EXPECT_EQ(c.get(kBuffsize), 1 << 20);
  EXPECT_TRUE(c.get(kIbDisable));
  EXPECT_TRUE(c.fileWarnings().empty());
  // A weft file wins over both nccl.conf files.
  write(weftUser_, "WEFT_BUFFSIZE=2M\n");
  c = Config::read();
  EXPECT_EQ(c.get(kBuffsize), 2 << 20);
  EXPECT_EQ(c.value(Id::kBuffsize).source.describe(), weftUser_ + " line 1");
  // The environment, NCCL name included, wins over every file.
  setenv("NCCL_BUFFSIZE", "8M", 1);
  setenv("NCCL_IB_DISABLE", "0", 1);
  c = Config::read();
  EXPECT_EQ(c.get(kBuffsize), 8 << 20);
  EXPECT_FALSE(c.get(kIbDisable));
}

TEST_F(NcclNames, SourceLinesNameTheNcclVariable) {
  setenv("NCCL_BUFFSIZE", "8M", 1);
  write(ncclSystem_, "NCCL_ALGO=ring\n");
  std::set<std::string> lines;
  for (const std::string& l : Config::read().sourceLines()) lines.insert(l);
  EXPECT_TRUE(lines.count("WEFT_BUFFSIZE=8M (NCCL_BUFFSIZE in the environment)"));
  EXPECT_TRUE(lines.count("WEFT_ALGO=ring (NCCL_ALGO in " + ncclSystem_ + " line 1)"));
}

TEST_F(NcclNames, NcclVariablesWithoutATwinAreNotedNotWarned) {
  setenv("NCCL_NTHREADS", "256", 1);
  write(ncclSystem_, "NCCL_NSLOTS=4\nnot a line\n");
  Config c = Config::read();
  std::set<std::string> ignored(c.ignoredNcclNames().begin(), c.ignoredNcclNames().end());
  EXPECT_TRUE(ignored.count("NCCL_NTHREADS (environment)"));
  EXPECT_TRUE(ignored.count("NCCL_NSLOTS (" + ncclSystem_ + " line 1)"));
  ASSERT_EQ(c.fileWarnings().size(), 1u);  // only the malformed line
  EXPECT_NE(c.fileWarnings()[0].find(ncclSystem_ + " line 2"), std::string::npos);
  EXPECT_EQ(c.get(kNSlots), 8);  // NCCL_NSLOTS is not NCCL's name for WEFT_NSLOTS
}

// The same parse, the same error code, the same words: only the name (the
// one the operator wrote) and where it was read differ.
TEST_F(NcclNames, MalformedValueIsTheWeftTwinsError) {
  setenv("WEFT_BUFFSIZE", "big", 1);
  const std::string weft = errorOf([] { Config::read().get(kBuffsize); });
  unsetenv("WEFT_BUFFSIZE");
  setenv("NCCL_BUFFSIZE", "big", 1);
  const std::string nccl = errorOf([] { Config::read().get(kBuffsize); });
  EXPECT_EQ(weft, "WEFT_BUFFSIZE=big is not an integer");
  EXPECT_EQ(nccl, "NCCL_BUFFSIZE=big is not an integer (read for WEFT_BUFFSIZE)");
  EXPECT_THROW(get(kBuffsize), Error);  // the process-wide reader too

  setenv("WEFT_IB_DISABLE", "maybe", 1);
  const std::string weftBool = errorOf([] { Config::read().get(kIbDisable); });
  unsetenv("WEFT_IB_DISABLE");
  write(ncclSystem_, "NCCL_IB_DISABLE=maybe\n");
  const std::string ncclBool = errorOf([] { Config::read().get(kIbDisable); });
  EXPECT_EQ(weftBool, "WEFT_IB_DISABLE=maybe is not a boolean (use 0 or 1)");
  EXPECT_EQ(ncclBool, "NCCL_IB_DISABLE=maybe is not a boolean (use 0 or 1) (set in " + ncclSystem_ +
                          " line 1; read for WEFT_IB_DISABLE)");
}

// Every row with an NCCL name: a malformed value under that name is the
// WEFT twin's error, word for word, with the name the operator wrote and
// the twin it was read for. Strings take any text; their checks after
// parsing (NCCL_ALGO's names, NCCL_TOPO_FILE's JSON) name the WEFT row.
TEST_F(NcclNames, EveryNumericOrBooleanNcclNameFailsAsItsTwin) {
  int checked = 0;
  for (const Info& i : all()) {
    if (!i.ncclName || i.type == Type::String) continue;
    const Id id = static_cast<Id>(&i - kTable);
    const char* bad = i.type == Type::Int ? "lots" : "maybe";
    auto errorUnder = [&](const char* name) {
      setenv(name, bad, 1);
      const std::string e = errorOf([&] {
        const Config c = Config::read();
        if (i.type == Type::Int) c.get(IntSetting{id});
        else c.get(BoolSetting{id});
      });
      unsetenv(name);
      return e;
    };
    const std::string weft = errorUnder(i.name), nccl = errorUnder(i.ncclName);
    const std::string what = std::string("=") + bad + " is not " + (i.type == Type::Int ? "an integer" : "a boolean");
    EXPECT_EQ(weft.rfind(std::string(i.name) + what, 0), 0u) << weft;
    std::string expected = weft;
    expected.replace(0, strlen(i.name), i.ncclName);
    EXPECT_EQ(nccl, expected + " (read for " + i.name + ")");
    checked++;
  }
  EXPECT_GE(checked, 15);
}

}  // namespace
}  // namespace weft::settings
