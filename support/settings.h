// The library's settings from the environment (support/settings.def, one row each): the typed
// accessors through which every layer reads them, so that each variable is named, typed,
// defaulted and checked in one place. A value that does not read as its setting's type raises
// fluxion::Error naming the variable, the value and what was expected.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace fluxion::support {

enum class Setting : uint8_t {
#define FLUXION_SETTING(id, name, type, read, key, unset, choices, shown, description) id,
#include "support/settings.def"
#undef FLUXION_SETTING
};

// How a value is read (settings.def explains each).
enum class SettingType : uint8_t { Switch, Integer, PositiveInteger, Seconds, Bytes, String, List, Choice };
// When a value is taken from the environment: at the first use in the process, or at every use.
enum class Read : uint8_t { Once, EachUse };
// Whether a setting is part of the CPU backend's compile-cache key.
enum class CacheKey : uint8_t { NoKey, InKey };

// One row of settings.def.
struct SettingInfo {
  Setting id;
  const char* name;
  SettingType type;
  Read read;
  CacheKey key;
  const char* unset;    // the value when unset or empty, or "" for none
  const char* choices;  // Choice: the values; Switch: other values that turn it on; |-separated
  const char* shown;    // the default as docs/environment.md words it
  const char* description;
};

const SettingInfo& info(Setting s);
// Every row of settings.def, in its order.
std::span<const SettingInfo> all_settings();

// A Switch: whether it is on.
bool enabled(Setting s);
// An Integer, PositiveInteger or Bytes setting; empty when unset without a default.
std::optional<int64_t> whole_number(Setting s);
// A Seconds setting (each has a default).
double seconds(Setting s);
// The checked value as text: a Switch's "on" or "off" (or the other value that turned it on),
// a Choice as settings.def spells it, any other setting's text; "" when unset without a default.
std::string text(Setting s);
// A List's items, empty ones left out.
std::vector<std::string> items(Setting s);

// Every InKey setting with its value ("NAME=value" lines), for a cache key: code compiled under
// other values is another entry.
std::string cache_key_settings();

// What text() would return were `value` the variable's value (empty reads as unset): the check
// the accessors make, apart from the environment, for tests. Raises Error for a bad value.
std::string parse(Setting s, const std::string& value);

}  // namespace fluxion::support
