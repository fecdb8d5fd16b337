// The settings table (support/settings.def): docs/environment.md lists every row with the same
// default and the library's rows of the page are all in the table; every typed setting refuses a
// bad value with an Error naming the variable and the value; switches take the same spellings
// everywhere; a Once setting keeps its first value; the cache key names the InKey settings.
#include "support/settings.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/scoped_env.h"
#include "fluxion/error.h"

namespace {

namespace support = fluxion::support;
using fluxion::testing::ScopedEnv;
using support::Setting;
using support::SettingInfo;
using support::SettingType;

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string without_backquotes(std::string s) {
  std::erase(s, '`');
  return s;
}

// The names between backquotes in `cell`.
std::vector<std::string> backquoted(const std::string& cell) {
  std::vector<std::string> out;
  for (size_t at = cell.find('`'); at != std::string::npos; at = cell.find('`', at)) {
    size_t end = cell.find('`', at + 1);
    if (end == std::string::npos) break;
    out.push_back(cell.substr(at + 1, end - at - 1));
    at = end + 1;
  }
  return out;
}

// One row of docs/environment.md's table.
struct DocRow {
  std::string read_by, shown, where;
};

// The page's rows by variable name (a row naming several variables is each one's).
std::map<std::string, DocRow> environment_page() {
  std::ifstream in(FLUXION_ENVIRONMENT_DOC);
  EXPECT_TRUE(in) << "cannot read " << FLUXION_ENVIRONMENT_DOC;
  std::map<std::string, DocRow> rows;
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("| `")) continue;
    std::vector<std::string> cells;
    std::istringstream parts(line.substr(1));
    for (std::string cell; std::getline(parts, cell, '|');) cells.push_back(trim(cell));
    // variable | read by | meaning | default | where
    if (cells.size() != 5) {
      ADD_FAILURE() << "a row of the table without its 5 columns: " << line;
      continue;
    }
    for (const std::string& name : backquoted(cells[0]))
      rows[name] = {cells[1], without_backquotes(cells[3]), cells[4]};
  }
  return rows;
}

// Whether the page says the library reads the row's variable (not only tests, tools or make).
bool read_by_library(const DocRow& row) {
  return row.read_by.starts_with("library") || row.read_by.starts_with("`fluxion::distributed`");
}

// The Error message `value` raises for `s`, or "" when it raises none.
std::string error_for(Setting s, const std::string& value) {
  try {
    support::parse(s, value);
  } catch (const fluxion::Error& e) {
    return e.what();
  }
  return "";
}

const std::vector<std::string> kOn = {"1", "on", "ON", "True", "yes", "Yes"};
const std::vector<std::string> kOff = {"0", "off", "Off", "FALSE", "no", "NO"};

TEST(Settings, TheEnvironmentPageListsEveryRowWithItsDefault) {
  std::map<std::string, DocRow> page = environment_page();
  for (const SettingInfo& s : support::all_settings()) {
    SCOPED_TRACE(s.name);
    auto row = page.find(s.name);
    if (row == page.end()) {
      ADD_FAILURE() << "docs/environment.md has no row for " << s.name;
      continue;
    }
    EXPECT_TRUE(read_by_library(row->second)) << "read by: " << row->second.read_by;
    EXPECT_EQ(row->second.shown, s.shown);
    EXPECT_NE(row->second.where.find("support/settings.def"), std::string::npos) << "where: " << row->second.where;
  }
}

TEST(Settings, EveryVariableThePageSaysTheLibraryReadsIsInTheTable) {
  std::set<std::string> table;
  for (const SettingInfo& s : support::all_settings()) table.insert(s.name);
  for (const auto& [name, row] : environment_page()) {
    if (read_by_library(row)) {
      EXPECT_TRUE(table.count(name)) << name << " is not in support/settings.def";
    }
  }
}

TEST(Settings, TheTableIsConsistent) {
  std::set<std::string> names;
  for (size_t i = 0; i < support::all_settings().size(); ++i) {
    const SettingInfo& s = support::all_settings()[i];
    SCOPED_TRACE(s.name);
    EXPECT_EQ(static_cast<size_t>(s.id), i);
    EXPECT_EQ(&support::info(s.id), &s);
    EXPECT_TRUE(names.insert(s.name).second) << "a second row";
    EXPECT_FALSE(std::string(s.description).empty());
    // The default reads as the setting's type, as the accessors give it, and the page's words
    // for it name it.
    std::string unset = s.unset;
    if (!unset.empty()) {
      EXPECT_EQ(support::parse(s.id, unset), unset);
      EXPECT_NE(std::string(s.shown).find(unset), std::string::npos) << "shown: " << s.shown;
    }
    EXPECT_TRUE(s.type != SettingType::Seconds || !unset.empty()) << "support::seconds needs a default";
    EXPECT_TRUE(s.type != SettingType::Choice || *s.choices);
    // The compile-cache key and the code compiled must see one value.
    EXPECT_TRUE(s.key != support::CacheKey::InKey || s.read == support::Read::Once);
  }
}

TEST(Settings, ABadValueRaisesAnErrorNamingTheVariableAndTheValue) {
  const std::map<SettingType, std::vector<std::string>> bad = {
      {SettingType::Switch, {"maybe", "2", "enabled"}},
      {SettingType::Integer, {"12abc", "1.5", "+3", "99999999999999999999"}},
      {SettingType::PositiveInteger, {"0", "-3", "four", "2x"}},
      {SettingType::Seconds, {"5 minutes", "0", "-1", "inf", "nan"}},
      {SettingType::Bytes, {"4GB", "-1", "1e9", "99999999999999999999"}},
      {SettingType::Choice, {"sse9", "native,avx2"}},
  };
  size_t checked = 0;
  for (const SettingInfo& s : support::all_settings()) {
    auto values = bad.find(s.type);
    if (values == bad.end()) continue;  // any text is a String's or a List's value
    for (const std::string& v : values->second) {
      SCOPED_TRACE(std::string(s.name) + "=" + v);
      std::string m = error_for(s.id, v);
      EXPECT_NE(m.find(std::string(s.name) + "='" + v + "' is not "), std::string::npos) << m;
      ++checked;
    }
  }
  EXPECT_GT(checked, 20u);
  // What the existing messages say (tests/errors, tests/CMakeLists.txt's distributed.bad_timeout).
  EXPECT_NE(error_for(Setting::memory_limit, "4GB").find("'4GB' is not a number of bytes"), std::string::npos);
  EXPECT_NE(error_for(Setting::collective_timeout, "5 minutes")
                .find("FLUXION_COLLECTIVE_TIMEOUT='5 minutes' is not a positive number of seconds"),
            std::string::npos);
  EXPECT_NE(error_for(Setting::cpu_features, "sse").find("one of native, avx512, avx2"), std::string::npos);
}

TEST(Settings, GoodValuesReadAsTheirTypes) {
  EXPECT_EQ(support::parse(Setting::vulkan_drop_barrier, "-1"), "-1");
  EXPECT_EQ(support::parse(Setting::vulkan_drop_barrier, "4"), "4");
  EXPECT_EQ(support::parse(Setting::num_threads, "8"), "8");
  EXPECT_EQ(support::parse(Setting::memory_limit, "0"), "0");
  EXPECT_EQ(support::parse(Setting::collective_timeout, "0.5"), "0.5");
  EXPECT_EQ(support::parse(Setting::cpu_features, "AVX2"), "avx2");
  EXPECT_EQ(support::parse(Setting::vulkan_profile, "mobile"), "mobile");
  EXPECT_EQ(support::parse(Setting::vulkan_profile, ""), "");
  EXPECT_EQ(support::parse(Setting::fashion_mnist, ""), "/usr/share/datasets/fashion-mnist");
}

TEST(Settings, EverySwitchTakesTheSameSpellings) {
  for (const SettingInfo& s : support::all_settings()) {
    if (s.type != SettingType::Switch) continue;
    SCOPED_TRACE(s.name);
    for (const std::string& v : kOn) EXPECT_EQ(support::parse(s.id, v), "on") << v;
    for (const std::string& v : kOff) EXPECT_EQ(support::parse(s.id, v), "off") << v;
    EXPECT_EQ(support::parse(s.id, ""), s.unset);
  }
  // The switches with further values that turn them on.
  EXPECT_EQ(support::parse(Setting::profile, "trace.json"), "trace.json");
  EXPECT_NE(error_for(Setting::profile, "trace.txt").find("a file name ending in .json"), std::string::npos);
  EXPECT_NE(error_for(Setting::profile, ".json"), "");
  EXPECT_EQ(support::parse(Setting::vulkan_validation, "GPU"), "gpu");
  EXPECT_NE(error_for(Setting::dump_ir, "gpu"), "");
}

TEST(Settings, AnEachUseSettingIsReadAtEveryUse) {
  {
    ScopedEnv v("FLUXION_VULKAN_LOOP_KERNELS", "false");
    EXPECT_FALSE(support::enabled(Setting::vulkan_loop_kernels));
  }
  {
    ScopedEnv v("FLUXION_VULKAN_LOOP_KERNELS", "On");
    EXPECT_TRUE(support::enabled(Setting::vulkan_loop_kernels));
  }
  {
    ScopedEnv v("FLUXION_DISK_CACHE", "off");
    EXPECT_FALSE(support::enabled(Setting::disk_cache));
  }
  {
    ScopedEnv v("FLUXION_DISK_CACHE", "maybe");
    EXPECT_THROW(support::enabled(Setting::disk_cache), fluxion::Error);
  }
  {
    ScopedEnv v("FLUXION_VULKAN_MEMORY_LIMIT", "123");
    EXPECT_EQ(support::whole_number(Setting::vulkan_memory_limit).value_or(-1), 123);
  }
  {
    ScopedEnv v("FLUXION_VULKAN_MEMORY_LIMIT", "lots");
    try {
      support::whole_number(Setting::vulkan_memory_limit);
      ADD_FAILURE() << "no error";
    } catch (const fluxion::Error& e) {
      EXPECT_NE(std::string(e.what()).find("FLUXION_VULKAN_MEMORY_LIMIT='lots' is not a number of bytes"),
                std::string::npos)
          << e.what();
    }
  }
  {
    ScopedEnv v("FLUXION_VULKAN_DISABLE", "int64,,float64");
    EXPECT_EQ(support::items(Setting::vulkan_disable), (std::vector<std::string>{"int64", "float64"}));
  }
  {
    ScopedEnv v("FLUXION_COLLECTIVE_TIMEOUT", "2.5");
    EXPECT_EQ(support::seconds(Setting::collective_timeout), 2.5);
  }
}

TEST(Settings, AOnceSettingKeepsItsFirstValue) {
  bool first = support::enabled(Setting::dump_glsl);
  ScopedEnv flipped("FLUXION_DUMP_GLSL", first ? "0" : "1");
  EXPECT_EQ(support::enabled(Setting::dump_glsl), first);
}

TEST(Settings, TheCacheKeyNamesEveryInKeySettingWithItsValue) {
  std::string expected;
  for (const SettingInfo& s : support::all_settings()) {
    if (s.key == support::CacheKey::InKey) expected += std::string(s.name) + "=" + support::text(s.id) + "\n";
  }
  EXPECT_EQ(support::cache_key_settings(), expected);
  EXPECT_NE(expected.find("FLUXION_ASYNC_COLLECTIVES="), std::string::npos);
  EXPECT_NE(expected.find("FLUXION_CPU_FEATURES="), std::string::npos);
}

TEST(Settings, AnAccessorOfAnotherTypeIsAnInternalError) {
  EXPECT_THROW(support::enabled(Setting::memory_limit), fluxion::Error);
  EXPECT_THROW(support::whole_number(Setting::disk_cache), fluxion::Error);
  EXPECT_THROW(support::items(Setting::cache_dir), fluxion::Error);
}

}  // namespace
