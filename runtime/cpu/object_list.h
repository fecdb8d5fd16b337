// A CPU program's object files (its kernel modules', then its entry point's) as one byte string:
// what an exported artifact's cpu.objects field and the on-disk cache's entry for a program hold.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fluxion::cpu {

// A count, then each object's size and bytes (little-endian 64-bit integers).
std::string encode_objects(const std::vector<std::string>& objects);
// The objects, or nullopt when `bytes` is not such a list of at least one object (cut off,
// bytes left over, a damaged size).
std::optional<std::vector<std::string>> decode_objects(std::string_view bytes);

}  // namespace fluxion::cpu
