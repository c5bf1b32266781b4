// The settings table and where values come from: defaults, /etc/weft.conf,
// ~/.weft.conf, WEFT_CONF_FILE, the environment.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "src/util/error.h"
#include "src/util/settings.h"
#include "weft/weft.h"

namespace weft::settings {
namespace {

namespace fs = std::filesystem;

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Each test gets its own directory with a "system" and a "user" file in
// place of /etc/weft.conf and ~/.weft.conf, and none of the variables it
// sets left behind.
class Settings : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/weft-settings-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    system_ = dir_ + "/system.conf";
    user_ = dir_ + "/user.conf";
    setFilePathsForTesting(std::vector<std::string>{system_, user_});
    for (const char* name : kTouched) unsetenv(name);
  }
  void TearDown() override {
    for (const char* name : kTouched) unsetenv(name);
    setFilePathsForTesting(std::nullopt);
    fs::remove_all(dir_);
  }
  void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
  static bool hasWarning(const Config& c, const std::string& part) {
    for (const std::string& w : c.fileWarnings())
      if (w.find(part) != std::string::npos) return true;
    return false;
  }

  static constexpr const char* kTouched[] = {"WEFT_NSLOTS", "WEFT_NCHANNELS", "WEFT_BUFFSIZE", "WEFT_SHM_DISABLE",
                                             "WEFT_ALGO",   "WEFT_CONF_FILE", "WEFT_TOPO_FILE"};
  std::string dir_, system_, user_;
};

TEST(SettingsTable, NamesAreUniqueAndDefaultsParse) {
  std::set<std::string> names;
  for (const Info& i : all()) {
    EXPECT_TRUE(names.insert(i.name).second) << i.name << " declared twice";
    EXPECT_EQ(std::string(i.name).rfind("WEFT_", 0), 0u) << i.name;
    EXPECT_NE(std::string(i.doc), "") << i.name;
    EXPECT_EQ(find(i.name), &i);
  }
  EXPECT_EQ(find("WEFT_NO_SUCH_THING"), nullptr);
  // A default is parsed like a set value, so a bad one would throw here.
  setFilePathsForTesting(std::vector<std::string>{});
  Config c = Config::read();
  setFilePathsForTesting(std::nullopt);
  for (int i = 0; i < kCount; i++) {
    const Info& info = kTable[i];
    if (c.value(static_cast<Id>(i)).source.kind != Source::Default) continue;  // set by whoever runs the test
    if (info.type == Type::Int) EXPECT_NO_THROW(c.get(IntSetting{static_cast<Id>(i)})) << info.name;
    if (info.type == Type::Bool) EXPECT_NO_THROW(c.get(BoolSetting{static_cast<Id>(i)})) << info.name;
  }
}

TEST(SettingsTable, DefaultsAreTheValuesTheCodeUsedBefore) {
  setFilePathsForTesting(std::vector<std::string>{});
  Config c = Config::read();
  EXPECT_EQ(c.get(kBuffsize), 4 << 20);
  EXPECT_EQ(c.get(kNSlots), 8);
  EXPECT_EQ(c.get(kTimeoutMs), 300000);
  EXPECT_EQ(c.get(kSocketBuffsize), 4 << 20);
  EXPECT_EQ(c.get(kIbGidIndex), -1);
  EXPECT_TRUE(c.get(kDmabufEnable));
  EXPECT_FALSE(c.get(kShmDisable));
  EXPECT_EQ(c.get(kIbVerbsLib).value_or(""), "libibverbs.so.1");
  EXPECT_FALSE(c.get(kTopoFile).has_value());
  setFilePathsForTesting(std::nullopt);
}

TEST_F(Settings, FileLinesCommentsAndBlanks) {
  write(system_,
        "# cluster defaults\n"
        "\n"
        "  WEFT_NSLOTS = 16   # deeper pipeline\n"
        "WEFT_ALGO=ring;allreduce:tree\n"
        "WEFT_SHM_DISABLE=yes\n");
  Config c = Config::read();
  EXPECT_EQ(c.get(kNSlots), 16);
  EXPECT_EQ(c.get(kAlgo).value_or(""), "ring;allreduce:tree");
  EXPECT_TRUE(c.get(kShmDisable));
  EXPECT_TRUE(c.fileWarnings().empty());
  EXPECT_EQ(c.value(Id::kNSlots).source.describe(), system_ + " line 3");
}

TEST_F(Settings, UserFileOverridesSystemFileAndEnvironmentOverridesBoth) {
  write(system_, "WEFT_NSLOTS=4\nWEFT_NCHANNELS=2\nWEFT_BUFFSIZE=1M\n");
  write(user_, "WEFT_NCHANNELS=3\nWEFT_BUFFSIZE=2M\n");
  setenv("WEFT_BUFFSIZE", "8M", 1);
  Config c = Config::read();
  EXPECT_EQ(c.get(kNSlots), 4);
  EXPECT_EQ(c.get(kNChannels), 3);
  EXPECT_EQ(c.get(kBuffsize), 8 << 20);
  EXPECT_EQ(c.value(Id::kNSlots).source.kind, Source::File);
  EXPECT_EQ(c.value(Id::kNChannels).source.file, user_);
  EXPECT_EQ(c.value(Id::kBuffsize).source.kind, Source::Environment);
  // The process-wide reader sees the same layers.
  EXPECT_EQ(get(kNChannels), 3);
  EXPECT_EQ(get(kBuffsize), 8 << 20);
  // An empty variable counts as unset: the file's value stands.
  setenv("WEFT_BUFFSIZE", "", 1);
  EXPECT_EQ(Config::read().get(kBuffsize), 2 << 20);
}

TEST_F(Settings, ConfFileIsReadLastAndAMissingOneIsReported) {
  const std::string extra = dir_ + "/extra.conf";
  write(user_, "WEFT_NSLOTS=4\n");
  write(extra, "WEFT_NSLOTS=6\n");
  setenv("WEFT_CONF_FILE", extra.c_str(), 1);
  EXPECT_EQ(Config::read().get(kNSlots), 6);
  setenv("WEFT_CONF_FILE", (dir_ + "/missing.conf").c_str(), 1);
  Config c = Config::read();
  EXPECT_EQ(c.get(kNSlots), 4);
  EXPECT_TRUE(hasWarning(c, "missing.conf (WEFT_CONF_FILE) cannot be read")) << c.fileWarnings().size();
}

TEST_F(Settings, UnknownNamesAndMalformedLinesAreWarnedWithFileAndLine) {
  write(system_, "WEFT_NSLOTS=4\nWEFT_NSLOT=5\nthis is not a setting\n=3\nNCCL_DEBUG=INFO\nWEFT_RANK=2\n");
  Config c = Config::read();
  EXPECT_EQ(c.get(kNSlots), 4);
  EXPECT_EQ(c.fileWarnings().size(), 5u);
  EXPECT_TRUE(hasWarning(c, system_ + " line 2: WEFT_NSLOT is not a weft setting"));
  EXPECT_TRUE(hasWarning(c, system_ + " line 3: 'this is not a setting' is not NAME=value"));
  EXPECT_TRUE(hasWarning(c, system_ + " line 4: '=3' is not NAME=value"));
  EXPECT_TRUE(hasWarning(c, system_ + " line 5: NCCL_DEBUG is not a weft setting"));
  EXPECT_TRUE(hasWarning(c, system_ + " line 6: WEFT_RANK is read from the environment only"));
}

TEST_F(Settings, BadValuesAreErrorsNamingTheVariableAndWhereItWasSet) {
  write(user_, "WEFT_NSLOTS=eight\nWEFT_SHM_DISABLE=maybe\nWEFT_BUFFSIZE=4X\n");
  Config c = Config::read();
  try {
    c.get(kNSlots);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), weftInvalidArgument);
    EXPECT_EQ(std::string(e.what()), "WEFT_NSLOTS=eight is not an integer (set in " + user_ + " line 1)");
  }
  EXPECT_THROW(c.get(kShmDisable), Error);
  EXPECT_THROW(c.get(kBuffsize), Error);
  // From the environment the message is the one weft always gave.
  setenv("WEFT_NSLOTS", "8Q", 1);
  try {
    Config::read().get(kNSlots);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), weftInvalidArgument);
    EXPECT_EQ(std::string(e.what()), "WEFT_NSLOTS=8Q has an unknown suffix");
  }
  // A size whose suffix overflows 64 bits is an error, not a wrapped value.
  setenv("WEFT_NSLOTS", "9000000000000G", 1);
  try {
    Config::read().get(kNSlots);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "WEFT_NSLOTS=9000000000000G is out of range");
  }
}

TEST_F(Settings, SourceLinesNameEveryValueThatIsNotADefault) {
  write(system_, "WEFT_NCHANNELS=2\n");
  setenv("WEFT_NSLOTS", "4", 1);
  Config c = Config::read();
  std::set<std::string> lines;
  for (const std::string& l : c.sourceLines()) lines.insert(l);
  EXPECT_TRUE(lines.count("WEFT_NSLOTS=4 (environment)"));
  EXPECT_TRUE(lines.count("WEFT_NCHANNELS=2 (" + system_ + " line 1)"));
  for (const std::string& l : lines) EXPECT_EQ(l.find("WEFT_BUFFSIZE"), std::string::npos) << l;
}

// libnccl.so.2 replaces WEFT_TIMEOUT_MS's default; files and the
// environment still win, and INFO lines name who set the default.
TEST_F(Settings, OverriddenDefaultIsBelowFilesAndEnvironment) {
  overrideDefault(Id::kNSlots, "12", "a test");
  Config c = Config::read();
  EXPECT_EQ(c.get(kNSlots), 12);
  EXPECT_EQ(get(kNSlots), 12);
  EXPECT_EQ(c.value(Id::kNSlots).source.describe(), "a test's default");
  const std::vector<std::string> lines = c.sourceLines();
  EXPECT_NE(std::find(lines.begin(), lines.end(), "WEFT_NSLOTS=12 (a test's default)"), lines.end());
  write(system_, "WEFT_NSLOTS=6\n");
  EXPECT_EQ(Config::read().get(kNSlots), 6);
  setenv("WEFT_NSLOTS", "4", 1);
  EXPECT_EQ(Config::read().get(kNSlots), 4);
  unsetenv("WEFT_NSLOTS");
  std::remove(system_.c_str());
  overrideDefault(Id::kNSlots, nullptr, nullptr);
  c = Config::read();
  EXPECT_EQ(c.get(kNSlots), 8);
  EXPECT_EQ(c.value(Id::kNSlots).source.describe(), "default");
}

TEST_F(Settings, BadFileValueFailsCommunicatorCreation) {
  // 6 slots: not a power of two, so a wrapping counter would reuse a slot.
  for (const char* line : {"WEFT_NSLOTS=1\n", "WEFT_NSLOTS=6\n"}) {
    write(user_, line);
    weftUniqueId id;
    ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
    weftComm_t comm = nullptr;
    EXPECT_EQ(weftCommInitRank(&comm, 1, id, 0), weftInvalidArgument) << line;
    EXPECT_EQ(comm, nullptr);
  }
  EXPECT_NE(std::string(weftGetLastError(nullptr)).find("must be a power of two"), std::string::npos)
      << weftGetLastError(nullptr);
}

// A communicator logs where its settings came from (INFO, subsystem ENV)
// and the files' problems (WARN). Logging is configured once per process,
// so this runs in a child process with its own WEFT_DEBUG.
TEST_F(Settings, CommunicatorLogsSourcesAtInfo) {
  const std::string conf = dir_ + "/job.conf", log = dir_ + "/log.txt";
  write(conf, "# job\nWEFT_NCHANNELS=2\nWEFT_NOT_A_SETTING=1\n");
  char self[4096] = {};
  ASSERT_GT(readlink("/proc/self/exe", self, sizeof(self) - 1), 0);
  const std::string cmd = "SETTINGS_TEST_LOG_CHILD=1 HOME=" + dir_ + " WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=ENV" +
                          " WEFT_DEBUG_FILE=" + log + " WEFT_CONF_FILE=" + conf + " WEFT_NSLOTS=4 " + self +
                          " --gtest_filter=SettingsLogChild.CreateOneRankCommunicator > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string text = readAll(log);
  EXPECT_NE(text.find("INFO setting WEFT_NSLOTS=4 (environment)"), std::string::npos) << text;
  EXPECT_NE(text.find("INFO setting WEFT_NCHANNELS=2 (" + conf + " line 2)"), std::string::npos) << text;
  EXPECT_NE(text.find("WARN settings: " + conf + " line 3: WEFT_NOT_A_SETTING is not a weft setting"),
            std::string::npos)
      << text;
}

TEST(SettingsLogChild, CreateOneRankCommunicator) {
  if (!getenv("SETTINGS_TEST_LOG_CHILD")) GTEST_SKIP() << "run by CommunicatorLogsSourcesAtInfo";
  setFilePathsForTesting(std::vector<std::string>{});  // not this machine's /etc/weft.conf
  weftUniqueId id;
  ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
  weftComm_t comm = nullptr;
  ASSERT_EQ(weftCommInitRank(&comm, 1, id, 0), weftSuccess);
  EXPECT_EQ(weftCommDestroy(comm), weftSuccess);
}

}  // namespace
}  // namespace weft::settings
