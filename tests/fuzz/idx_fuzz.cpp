// libFuzzer target: the IDX reader (raw and gzipped). Any input either decodes or raises
// fluxion::Error; a decoded file's payload is exactly its shape's elements.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "data/idx_file.h"
#include "fluxion/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    // 16 MiB bounds what a small compressed input may expand to under the fuzzer.
    fluxion::data::IdxFile f = fluxion::data::decode_idx(bytes, "fuzz input", int64_t{1} << 24);
    int64_t size_of[256] = {};
    size_of[0x08] = size_of[0x09] = 1, size_of[0x0B] = 2, size_of[0x0C] = size_of[0x0D] = 4, size_of[0x0E] = 8;
    if (static_cast<int64_t>(f.payload.size()) != fluxion::numel(f.shape) * size_of[f.type]) std::abort();
  } catch (const fluxion::Error&) {
  }
  return 0;
}
