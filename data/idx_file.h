// The parsed form of an IDX file, for readers that convert its bytes themselves.
#pragma once

#include <cstdint>
#include <string>

#include "fluxion/dtype.h"

namespace fluxion::data {

struct IdxFile {
  uint8_t type = 0;     // 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64
  Shape shape;
  std::string payload;  // big-endian elements, exactly numel(shape) of them
};

// Reads and validates the file (see read_idx); raises Error naming it when it is bad.
IdxFile read_idx_file(const std::string& path);
// The same for a file's bytes (gzip-compressed when they start with gzip's magic), `name`
// naming it in errors; decompressed data beyond `max_bytes` is an error (a fuzzer's bound).
IdxFile decode_idx(const std::string& bytes, const std::string& name, int64_t max_bytes = int64_t{1} << 32);

}  // namespace fluxion::data
