#include "runtime/cpu/object_list.h"

#include <cstdint>

namespace fluxion::cpu {
namespace {

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

std::string encode_objects(const std::vector<std::string>& objects) {
  std::string out;
  put_u64(out, objects.size());
  for (const std::string& o : objects) {
    put_u64(out, o.size());
    out += o;
  }
  return out;
}

std::optional<std::vector<std::string>> decode_objects(std::string_view bytes) {
  size_t at = 0;
  auto get = [&](uint64_t* v) {
    if (bytes.size() - at < 8) return false;
    *v = 0;
    for (int i = 0; i < 8; ++i) *v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
    at += 8;
    return true;
  };
  uint64_t count = 0;
  if (!get(&count) || count == 0 || count > bytes.size() / 8) return std::nullopt;
  std::vector<std::string> objects;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t size = 0;
    if (!get(&size) || size > bytes.size() - at) return std::nullopt;
    objects.emplace_back(bytes.substr(at, size));
    at += size;
  }
  if (at != bytes.size()) return std::nullopt;
  return objects;
}

}  // namespace fluxion::cpu
