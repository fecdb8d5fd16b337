// libFuzzer target: the safetensors reader. Any input either loads or raises fluxion::Error;
// what loads has the byte count its dtypes and shapes say.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "dsl/src/data/safetensors_bytes.h"
#include "fluxion/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    std::map<std::string, std::string> metadata;
    int64_t total = 0;
    for (const auto& [name, a] : fluxion::data::parse_safetensors(bytes, "fuzz input", &metadata)) {
      if (name.empty()) std::abort();
      total += a.size() * fluxion::dtype_size(a.dtype());
    }
    if (total > static_cast<int64_t>(size)) std::abort();
  } catch (const fluxion::Error&) {
  }
  return 0;
}
