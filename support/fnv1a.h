// FNV-1a, the 64-bit hash the project uses where it needs a stable one (file names of the disk
// cache, an artifact's checksum, a kernel module's name): the same value on every machine and
// run, unlike std::hash. It finds damage and tells texts apart, never forgery.
#pragma once

#include <cstdint>
#include <string_view>

namespace fluxion::support {

inline constexpr uint64_t kFnv1aOffset = 14695981039346656037ull;

inline uint64_t fnv1a(std::string_view bytes, uint64_t h = kFnv1aOffset) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace fluxion::support
