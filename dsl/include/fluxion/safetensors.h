// The safetensors file format (https://huggingface.co/docs/safetensors): a little-endian u64
// header length, a JSON header naming each tensor's dtype, shape and byte range, then the raw
// little-endian data. Readable by the safetensors library, PyTorch and JAX tools.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fluxion/array.h"

namespace fluxion {

using NamedArrays = std::vector<std::pair<std::string, Array>>;

// Writes `tensors` (names unique and non-empty) and string `metadata` to `path` atomically: the
// bytes go to a temporary file in the same directory, which is flushed and renamed over
// `path` only when complete, so a failed or interrupted save leaves any previous file intact.
// dtypes: F32, F64, I32, BOOL.
void save_safetensors(const std::string& path, const NamedArrays& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// Reads a whole file. Raises Error naming the file and the problem for a missing, truncated
// or corrupt file (bad header length, malformed JSON, unknown dtype, byte ranges that overlap,
// leave gaps or do not match the shape).
NamedArrays load_safetensors(const std::string& path, std::map<std::string, std::string>* metadata = nullptr);

}  // namespace fluxion
