#include "runtime/disk_cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/fnv1a.h"
#include "support/settings.h"

namespace fluxion::runtime {
namespace {

std::string file_for(const std::string& key) {
  std::string dir = disk_cache_dir();
  if (dir.empty()) return "";
  char name[40];
  std::snprintf(name, sizeof name, "%016llx%016llx.o", static_cast<unsigned long long>(support::fnv1a(key)),
                static_cast<unsigned long long>(support::fnv1a(key, 0x9e3779b97f4a7c15ull)));
  return dir + "/" + name;
}

// An entry: "FLUXIONOBJ1\n", the key's length and text, then the object bytes.
constexpr const char* kMagic = "FLUXIONOBJ1\n";

}  // namespace

std::string disk_cache_dir() {
  using support::Setting;
  if (!support::enabled(Setting::disk_cache)) return "";
  if (std::string d = support::text(Setting::cache_dir); !d.empty()) return d;
  if (std::string x = support::text(Setting::xdg_cache_home); !x.empty()) return x + "/fluxion";
  if (std::string h = support::text(Setting::home); !h.empty()) return h + "/.cache/fluxion";
  return "";
}

std::string disk_cache_load(const std::string& key, bool* found) {
  *found = false;
  std::string path = file_for(key);
  if (path.empty()) return "";
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string data = ss.str();
  std::string head = std::string(kMagic) + std::to_string(key.size()) + "\n" + key;
  if (data.size() <= head.size() || data.compare(0, head.size(), head) != 0) return "";
  *found = true;
  return data.substr(head.size());
}

void disk_cache_store(const std::string& key, const std::string& object) {
  std::string path = file_for(key);
  if (path.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  static std::atomic<uint64_t> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    out << kMagic << key.size() << "\n" << key << object;
    out.flush();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace fluxion::runtime
