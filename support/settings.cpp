// Reading and checking the settings of settings.def: the library's one reader of the environment.
#include "support/settings.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <mutex>
#include <sstream>

#include "fluxion/error.h"
#include "support/split.h"

namespace fluxion::support {
namespace {

// FLUXION_VULKAN_AUDIT_BARRIERS's default: a Debug build audits every Vulkan recording.
#ifdef NDEBUG
constexpr const char* kOnInDebugBuilds = "off";
#else
constexpr const char* kOnInDebugBuilds = "on";
#endif

constexpr SettingInfo kSettings[] = {
#define FLUXION_SETTING(id, name, type, read, key, unset, choices, shown, description) \
  {Setting::id, name, SettingType::type, Read::read, CacheKey::key, unset, choices, shown, description},
#include "support/settings.def"
#undef FLUXION_SETTING
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

[[noreturn]] void bad_value(const SettingInfo& s, const std::string& value, const std::string& expected) {
  detail::fail("environment", std::string(s.name) + "='" + value + "' is not " + expected);
}

std::string check_switch(const SettingInfo& s, const std::string& value) {
  std::string v = lower(value);
  if (v == "1" || v == "on" || v == "true" || v == "yes") return "on";
  if (v == "0" || v == "off" || v == "false" || v == "no") return "off";
  std::string more;
  for (const std::string& c : split(s.choices, '|')) {
    // A file name keeps its case.
    if (c.starts_with('*') && value.size() > c.size() - 1 && value.ends_with(c.substr(1))) return value;
    if (v == c) return c;
    more += ", " + (c.starts_with('*') ? "a file name ending in " + c.substr(1) : c);
  }
  bad_value(s, value, "a switch (on: 1, on, true, yes" + more + "; off: 0, off, false, no)");
}

std::string check_choice(const SettingInfo& s, const std::string& value) {
  std::string v = lower(value);
  std::vector<std::string> choices = split(s.choices, '|');
  for (const std::string& c : choices) {
    if (v == c) return c;
  }
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
  bad_value(s, value, "one of " + list);
}

// `value` as a whole number: digits, with a leading - when `negative` allows it.
std::optional<int64_t> whole(const std::string& value, bool negative) {
  if (value.empty() || (value[0] == '-' && !negative)) return std::nullopt;
  int64_t n = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (error != std::errc() || end != value.data() + value.size()) return std::nullopt;
  return n;
}

// The value `value` (non-empty) gives `s`, as text() returns it; raises Error when it does not
// read as the setting's type.
std::string check(const SettingInfo& s, const std::string& value) {
  switch (s.type) {
    case SettingType::Switch: return check_switch(s, value);
    case SettingType::Choice: return check_choice(s, value);
    case SettingType::Integer: {
      std::optional<int64_t> n = whole(value, true);
      if (!n) bad_value(s, value, "a whole number");
      return std::to_string(*n);
    }
    case SettingType::PositiveInteger: {
      std::optional<int64_t> n = whole(value, false);
      if (!n || *n < 1) bad_value(s, value, "a positive whole number");
      return std::to_string(*n);
    }
    case SettingType::Bytes: {
      std::optional<int64_t> n = whole(value, false);
      if (!n) bad_value(s, value, "a number of bytes");
      return std::to_string(*n);
    }
    case SettingType::Seconds: {
      char* end = nullptr;
      double n = std::strtod(value.c_str(), &end);
      if (*end != '\0' || !std::isfinite(n) || !(n > 0)) {
        bad_value(s, value, "a positive number of seconds");
      }
      return value;
    }
    case SettingType::String:
    case SettingType::List: break;
  }
  return value;
}

// The environment's value of `s`, or nullopt when unset or empty: the library's only getenv.
std::optional<std::string> from_environment(const SettingInfo& s) {
  const char* v = std::getenv(s.name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

// The environment's value of `s` as its Read column says: now, or as it was at the first use.
std::optional<std::string> taken(const SettingInfo& s) {
  if (s.read == Read::EachUse) return from_environment(s);
  struct Taken {
    std::array<std::once_flag, std::size(kSettings)> once;
    std::array<std::optional<std::string>, std::size(kSettings)> values;
  };
  static auto* taken = new Taken();  // read by exit handlers (the profiler's): never destroyed
  size_t i = static_cast<size_t>(s.id);
  std::call_once(taken->once[i], [&] { taken->values[i] = from_environment(s); });
  return taken->values[i];
}

std::string current(const SettingInfo& s) {
  std::optional<std::string> v = taken(s);
  return v ? check(s, *v) : s.unset;
}

// The row of `s`, which an accessor for `types` reads; another type is a mistake in the caller.
const SettingInfo& typed(Setting s, std::initializer_list<SettingType> types, const char* accessor) {
  const SettingInfo& i = info(s);
  if (std::find(types.begin(), types.end(), i.type) == types.end()) {
    detail::fail("environment", std::string("internal error: ") + i.name + " is read by " + accessor +
                                    ", which does not read its type");
  }
  return i;
}

}  // namespace

const SettingInfo& info(Setting s) { return kSettings[static_cast<size_t>(s)]; }

std::span<const SettingInfo> all_settings() { return kSettings; }

bool enabled(Setting s) { return current(typed(s, {SettingType::Switch}, "enabled")) != "off"; }

std::optional<int64_t> whole_number(Setting s) {
  std::string v =
      current(typed(s, {SettingType::Integer, SettingType::PositiveInteger, SettingType::Bytes}, "whole_number"));
  return v.empty() ? std::nullopt : whole(v, true);
}

double seconds(Setting s) { return std::strtod(current(typed(s, {SettingType::Seconds}, "seconds")).c_str(), nullptr); }

std::string text(Setting s) { return current(info(s)); }

std::vector<std::string> items(Setting s) { return split(current(typed(s, {SettingType::List}, "items")), ','); }

std::string cache_key_settings() {
  std::string key;
  for (const SettingInfo& s : kSettings) {
    if (s.key == CacheKey::InKey) key += std::string(s.name) + "=" + current(s) + "\n";
  }
  return key;
}

std::string parse(Setting s, const std::string& value) {
  const SettingInfo& i = info(s);
  return value.empty() ? i.unset : check(i, value);
}

}  // namespace fluxion::support
