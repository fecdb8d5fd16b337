// The parsed form of an IDX file, for readers that convert its bytes themselves.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fluxion/dtype.h"

namespace fluxion::data {

struct IdxFile {
  uint8_t type = 0;  // 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64
  Shape shape;
  std::string payload;  // big-endian elements, exactly numel(shape) of them
};

// Where the elements of an uncompressed IDX file's bytes are: its type, its shape and the offset
// of the first element. Validates the header and the size; raises Error naming `path`.
struct IdxLayout {
  uint8_t type = 0;
  Shape shape;
  int64_t payload_offset = 0;
};
IdxLayout parse_idx_layout(std::string_view bytes, const std::string& path);
// Bytes per stored element of `type` (0 for a type byte IDX does not define).
int64_t idx_element_bytes(uint8_t type);
// The dtype read_idx gives elements of `type` (i32 for the integers, f32, f64).
DType idx_dtype(uint8_t type);
// Converts `n` big-endian elements of `type` at `src` to idx_dtype(type) at `dst`.
void convert_idx_elements(uint8_t type, const unsigned char* src, int64_t n, void* dst);

// Reads and validates the file (see read_idx); raises Error naming it when it is bad.
IdxFile read_idx_file(const std::string& path);
// The same for a file's bytes (gzip-compressed when they start with gzip's magic), `path`
// naming it in errors; decompressed data beyond `max_bytes` is an error (a fuzzer's bound).
IdxFile decode_idx(const std::string& file, const std::string& path, int64_t max_bytes = int64_t{1} << 32);

}  // namespace fluxion::data
