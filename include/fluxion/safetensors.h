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
// Each Fluxion dtype is written as itself: f32 as F32, f64 as F64, i32 as I32, bool as BOOL, f16
// as F16, bf16 as BF16.
void save_safetensors(const std::string& path, const NamedArrays& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// Reads a whole file. Each tensor becomes the Fluxion dtype that holds its values exactly:
// F32, F64, I32, BOOL, F16 and BF16 as themselves (any nonzero BOOL byte is true); I64, U64,
// U32, I16, U16, I8 and U8 as i32, an integer outside i32's range being an Error naming the
// tensor, the value and its position. Other dtypes (F8 formats, complex) are refused. Raises
// Error naming the file and the problem for a missing, truncated or corrupt file (bad header
// length, malformed JSON, unknown dtype, byte ranges that overlap, leave gaps or do not match
// the shape).
NamedArrays load_safetensors(const std::string& path, std::map<std::string, std::string>* metadata = nullptr);

}  // namespace fluxion
