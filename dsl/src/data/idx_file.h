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

}  // namespace fluxion::data
