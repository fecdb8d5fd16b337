// The safetensors reader on a file's bytes (load_safetensors reads the file, then this), for
// callers that hold the bytes already (the fuzz target) or read parts of a mapped file (the
// sharded datasets).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fluxion/safetensors.h"

namespace fluxion::data {

// The tensors of a file's bytes `file`; raises Error naming `path` for damaged bytes (see
// load_safetensors).
NamedArrays parse_safetensors(std::string_view file, const std::string& path,
                              std::map<std::string, std::string>* metadata = nullptr);

// One tensor of a safetensors file as stored.
struct StoredTensor {
  std::string name;
  TensorType type;        // as Fluxion reads it
  std::string code;       // the file's dtype ("F32", "U8", ...)
  int64_t element_bytes;  // as stored
  int64_t offset;         // of its first byte, from the start of the file
  // Decodes elements [first, first + n) of the tensor, from the file's bytes `file`, into `dst`
  // (type.dtype); raises Error naming `path` for a value the dtype cannot hold.
  void read(std::string_view file, int64_t first, int64_t n, void* dst, const std::string& path) const;
};
// The tensors of a file's bytes without decoding them: the header validated, the data covered
// exactly.
std::vector<StoredTensor> parse_safetensors_layout(std::string_view file, const std::string& path,
                                                   std::map<std::string, std::string>* metadata = nullptr);

}  // namespace fluxion::data
