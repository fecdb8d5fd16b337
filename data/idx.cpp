#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "data/idx_file.h"
#include "fluxion/data.h"
#include "fluxion/error.h"

namespace fluxion::data {

namespace {

[[noreturn]] void bad_file(const std::string& path, const std::string& what) {
  fluxion::detail::fail("data::read_idx", "'" + path + "': " + what);
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) bad_file(path, "no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) bad_file(path, "cannot open");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) bad_file(path, "read error");
  return bytes;
}

// Inflates a whole gzip stream held in memory.
std::string gunzip(const std::string& bytes, const std::string& name, int64_t max_bytes) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) bad_file(name, "zlib cannot start inflating");
  size_t fed = 0;
  auto feed = [&] {  // zlib takes at most 4 GiB at a time
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + fed));
    z.avail_in = static_cast<uInt>(std::min<size_t>(bytes.size() - fed, UINT32_MAX));
    fed += z.avail_in;
  };
  feed();
  std::string out;
  char chunk[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (z.avail_in == 0 && fed < bytes.size()) feed();
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(chunk, sizeof chunk - z.avail_out);
    if (static_cast<int64_t>(out.size()) > max_bytes) {
      inflateEnd(&z);
      bad_file(name, "decompresses to more than " + std::to_string(max_bytes) + " bytes");
    }
    if (rc == Z_BUF_ERROR || (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0)) {
      inflateEnd(&z);
      bad_file(name, "truncated gzip data (unexpected end of file)");
    }
    if (rc != Z_OK && rc != Z_STREAM_END) {
      std::string msg = z.msg ? z.msg : "error " + std::to_string(rc);
      inflateEnd(&z);
      bad_file(name, "corrupt gzip data: " + msg);
    }
  }
  inflateEnd(&z);
  return out;
}

}  // namespace

int64_t idx_element_bytes(uint8_t type) {
  switch (type) {
    case 0x08: case 0x09: return 1;
    case 0x0B: return 2;
    case 0x0C: case 0x0D: return 4;
    case 0x0E: return 8;
    default: return 0;
  }
}

namespace {

uint64_t big_endian(const unsigned char* p, int64_t bytes) {
  uint64_t v = 0;
  for (int64_t i = 0; i < bytes; ++i) v = v << 8 | p[i];
  return v;
}

}  // namespace

IdxFile read_idx_file(const std::string& path) { return decode_idx(read_file(path), path); }

IdxLayout parse_idx_layout(std::string_view bytes, const std::string& path) {
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 4) bad_file(path, "truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the IDX header");
  if (b[0] != 0 || b[1] != 0 || idx_element_bytes(b[2]) == 0) {
    char magic[32];
    std::snprintf(magic, sizeof magic, "%02x %02x %02x %02x", b[0], b[1], b[2], b[3]);
    bad_file(path, std::string("bad magic number ") + magic +
                       ": expected 00 00, a type byte (08 u8, 09 i8, 0B i16, 0C i32, 0D f32, 0E f64) and a rank");
  }
  IdxLayout f;
  f.type = b[2];
  size_t rank = b[3];
  size_t header = 4 + 4 * rank;
  if (bytes.size() < header) bad_file(path, "truncated inside the header of a rank-" + std::to_string(rank) + " array");
  int64_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    auto dim = static_cast<int64_t>(big_endian(b + 4 + 4 * d, 4));
    f.shape.push_back(dim);
    if (__builtin_mul_overflow(count, dim, &count) || count > static_cast<int64_t>(bytes.size()))
      bad_file(path, "dimensions " + shape_str(f.shape) + "... need more data than the file holds (truncated?)");
  }
  int64_t want = count * idx_element_bytes(f.type);
  int64_t have = static_cast<int64_t>(bytes.size() - header);
  if (have < want)
    bad_file(path, "truncated: shape " + shape_str(f.shape) + " needs " + std::to_string(want) + " data bytes, found " +
                       std::to_string(have));
  if (have > want)
    bad_file(path, std::to_string(have - want) + " unexpected bytes after the data of shape " + shape_str(f.shape));
  f.payload_offset = static_cast<int64_t>(header);
  return f;
}

IdxFile decode_idx(const std::string& file, const std::string& path, int64_t max_bytes) {
  bool gzip =
      file.size() >= 2 && static_cast<unsigned char>(file[0]) == 0x1f && static_cast<unsigned char>(file[1]) == 0x8b;
  std::string bytes = gzip ? gunzip(file, path, max_bytes) : file;
  IdxLayout layout = parse_idx_layout(bytes, path);
  return {layout.type, layout.shape, bytes.substr(static_cast<size_t>(layout.payload_offset))};
}

DType idx_dtype(uint8_t type) { return type == 0x0D ? f32 : type == 0x0E ? f64 : i32; }

void convert_idx_elements(uint8_t type, const unsigned char* src, int64_t n, void* dst) {
  int64_t size = idx_element_bytes(type);
  auto* out = static_cast<unsigned char*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t v = big_endian(src + i * size, size);
    if (type == 0x0E) {
      std::memcpy(out + i * 8, &v, 8);
      continue;
    }
    // f32 keeps its bits; the integers are sign- or zero-extended to i32.
    auto word = static_cast<uint32_t>(v);
    if (type == 0x09) word = static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(v)));
    if (type == 0x0B) word = static_cast<uint32_t>(static_cast<int32_t>(static_cast<int16_t>(v)));
    std::memcpy(out + i * 4, &word, 4);
  }
}

Array read_idx(const std::string& path) {
  IdxFile f = read_idx_file(path);
  Array out(idx_dtype(f.type), f.shape);
  convert_idx_elements(f.type, reinterpret_cast<const unsigned char*>(f.payload.data()), numel(f.shape),
                       out.mutable_data());
  return out;
}

}  // namespace fluxion::data
