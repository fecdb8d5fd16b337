#include "fluxion/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>

#include "data/json.h"
#include "data/mapped_file.h"
#include "data/safetensors_bytes.h"
#include "fluxion/error.h"
#include "support/files.h"

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace fluxion {

namespace {

[[noreturn]] void bad_file(const std::string& path, const std::string& what) {
  detail::fail("load_safetensors", "'" + path + "': " + what);
}

// Where a tensor being decoded comes from, for error messages.
struct Origin {
  const std::string& path;
  const std::string& name;
  const char* code;
  int64_t first = 0;  // the index of the first element decoded
};

template <class T>
T read_at(const char* src, int64_t i) {
  T v;
  std::memcpy(&v, src + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

template <class T>
void write_at(void* dst, int64_t i, T v) {
  std::memcpy(static_cast<char*>(dst) + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

template <size_t Bytes>
void copy_as_is(const char* src, int64_t n, void* dst, const Origin&) {
  if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * Bytes);
}

void read_bool(const char* src, int64_t n, void* dst, const Origin&) {  // any nonzero byte is true
  auto* out = static_cast<unsigned char*>(dst);
  for (int64_t i = 0; i < n; ++i) out[i] = src[i] != 0;
}

template <class T>
void read_int(const char* src, int64_t n, void* dst, const Origin& from) {
  for (int64_t i = 0; i < n; ++i) {
    T v = read_at<T>(src, i);
    if (!std::in_range<int32_t>(v))
      bad_file(from.path, "tensor '" + from.name + "' holds " + std::to_string(v) + " at element " +
                              std::to_string(from.first + i) + ", outside i32's range (Fluxion reads " + from.code +
                              " as i32)");
    write_at(dst, i, static_cast<int32_t>(v));
  }
}

// A dtype as a file stores it: its code, its bytes per element, the Fluxion dtype that holds its
// values exactly, and how to convert. The first entry of each Fluxion dtype is the one written.
struct Stored {
  const char* code;
  int64_t size;
  DType dtype;
  void (*decode)(const char* src, int64_t n, void* dst, const Origin& from);
};

constexpr Stored kStored[] = {
    {"F32", 4, DType::f32, copy_as_is<4>},      {"F64", 8, DType::f64, copy_as_is<8>},
    {"I32", 4, DType::i32, copy_as_is<4>},      {"BOOL", 1, DType::boolean, read_bool},
    {"F16", 2, DType::f16, copy_as_is<2>},      {"BF16", 2, DType::bf16, copy_as_is<2>},
    {"I64", 8, DType::i32, read_int<int64_t>},  {"U64", 8, DType::i32, read_int<uint64_t>},
    {"U32", 4, DType::i32, read_int<uint32_t>}, {"I16", 2, DType::i32, read_int<int16_t>},
    {"U16", 2, DType::i32, read_int<uint16_t>}, {"I8", 1, DType::i32, read_int<int8_t>},
    {"U8", 1, DType::i32, read_int<uint8_t>},
};

const char* dtype_code(DType t) {
  for (const Stored& s : kStored)
    if (s.dtype == t) return s.code;
  return "?";
}

const Stored* stored_from_code(const std::string& code) {
  for (const Stored& s : kStored)
    if (code == s.code) return &s;
  return nullptr;
}

std::string stored_codes() {
  std::string out;
  for (const Stored& s : kStored) out += (out.empty() ? "" : ", ") + std::string(s.code);
  return out;
}

struct Entry {
  std::string name;
  TensorType type;  // as Fluxion reads it
  const Stored* stored = nullptr;
  int64_t begin = 0, end = 0;  // from the start of the data
};

Entry parse_entry(const std::string& path, const std::string& name, const data::json::Value& v) {
  auto field = [&](const char* key) -> const data::json::Value& {
    const data::json::Value* f = v.find(key);
    if (!f) bad_file(path, "tensor '" + name + "' has no \"" + key + "\"");
    return *f;
  };
  if (v.kind != data::json::Value::Kind::Object) bad_file(path, "tensor '" + name + "': expected an object");
  Entry e;
  e.name = name;
  const data::json::Value& dtype = field("dtype");
  if (dtype.kind == data::json::Value::Kind::String) e.stored = stored_from_code(dtype.text);
  if (!e.stored)
    bad_file(path, "tensor '" + name + "' has dtype " +
                       (dtype.kind == data::json::Value::Kind::String ? dtype.text : "?") + ": Fluxion reads " +
                       stored_codes());
  e.type.dtype = e.stored->dtype;
  const data::json::Value& shape = field("shape");
  const data::json::Value& offsets = field("data_offsets");
  if (shape.kind != data::json::Value::Kind::Array || offsets.kind != data::json::Value::Kind::Array ||
      offsets.items.size() != 2)
    bad_file(path, "tensor '" + name + "': expected \"shape\" [dims...] and \"data_offsets\" [begin, end]");
  int64_t bytes = e.stored->size;
  for (const data::json::Value& d : shape.items) {
    int64_t dim = d.as_int();
    if (dim < 0 || __builtin_mul_overflow(bytes, dim, &bytes))
      bad_file(path, "tensor '" + name + "' has a bad dimension " + d.text);
    e.type.shape.push_back(dim);
  }
  e.begin = offsets.items[0].as_int();
  e.end = offsets.items[1].as_int();
  if (e.begin < 0 || e.end < e.begin || e.end - e.begin != bytes)
    bad_file(path, "tensor '" + name + "' " + e.type.str() + " needs " + std::to_string(bytes) +
                       " bytes but its data_offsets are [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                       "]");
  return e;
}

}  // namespace

void save_safetensors(const std::string& path, const NamedArrays& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::set<std::string> names;
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      header += (first ? "" : ",") + data::json::quote(k) + ":" + data::json::quote(v);
      first = false;
    }
    header += "}";
  }
  int64_t offset = 0;
  for (const auto& [name, a] : tensors) {
    if (name.empty() || name == "__metadata__" || !names.insert(name).second)
      detail::fail("save_safetensors", "tensor name '" + name + "' is empty, reserved or repeated");
    int64_t bytes = a.size() * dtype_size(a.dtype());
    header += (header.size() > 1 ? "," : "") + data::json::quote(name) + ":{\"dtype\":\"" + dtype_code(a.dtype()) +
              "\",\"shape\":[";
    for (size_t d = 0; d < a.shape().size(); ++d) header += (d ? "," : "") + std::to_string(a.shape()[d]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string file(8, '\0');
  uint64_t n = header.size();
  std::memcpy(file.data(), &n, 8);
  file += header;
  file.reserve(file.size() + static_cast<size_t>(offset));
  for (const auto& entry : tensors) {
    const Array& a = entry.second;
    if (a.size() > 0)
      file.append(static_cast<const char*>(a.data()), static_cast<size_t>(a.size() * dtype_size(a.dtype())));
  }
  support::write_file_atomically(path, file, "save_safetensors");
}

NamedArrays load_safetensors(const std::string& path, std::map<std::string, std::string>* metadata) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) bad_file(path, "no such file");
  data::MappedFile file(path, "load_safetensors");
  return data::parse_safetensors(file.bytes(), path, metadata);
}

std::vector<data::StoredTensor> data::parse_safetensors_layout(std::string_view file, const std::string& path,
                                                               std::map<std::string, std::string>* metadata) {
  if (file.size() < 8) bad_file(path, "truncated: " + std::to_string(file.size()) + " bytes, no header length");
  uint64_t header_size = 0;
  std::memcpy(&header_size, file.data(), 8);
  if (header_size > file.size() - 8)
    bad_file(path, "header length " + std::to_string(header_size) + " exceeds the file's " +
                       std::to_string(file.size() - 8) + " remaining bytes (truncated or not a safetensors file)");
  data::json::Value header;
  try {
    header = data::json::parse(file.substr(8, header_size));
  } catch (const data::json::JsonError& e) {
    bad_file(path, std::string("malformed JSON header: ") + e.what());
  }
  if (header.kind != data::json::Value::Kind::Object) bad_file(path, "the header is not a JSON object");
  std::vector<Entry> entries;
  std::set<std::string> seen;
  try {
    for (const auto& [name, v] : header.members) {
      if (name.empty()) bad_file(path, "a tensor has an empty name");
      if (!seen.insert(name).second) bad_file(path, "tensor '" + name + "' appears twice");
      if (name == "__metadata__") {
        if (v.kind != data::json::Value::Kind::Object) bad_file(path, "__metadata__ is not an object");
        for (const auto& [k, s] : v.members) {
          if (s.kind != data::json::Value::Kind::String) bad_file(path, "metadata '" + k + "' is not a string");
          if (metadata) (*metadata)[k] = s.text;
        }
        continue;
      }
      entries.push_back(parse_entry(path, name, v));
    }
  } catch (const data::json::JsonError& e) {
    bad_file(path, std::string("malformed header: ") + e.what());
  }
  // The data must be covered exactly: no overlap, no gap, nothing past the end.
  auto data_size = static_cast<int64_t>(file.size() - 8 - header_size);
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  int64_t covered = 0;
  for (const Entry* e : by_offset) {
    if (e->begin != covered)
      bad_file(path, "tensor '" + e->name + "' starts at byte " + std::to_string(e->begin) + ", expected " +
                         std::to_string(covered) + " (overlapping data or a gap)");
    covered = e->end;
  }
  if (covered != data_size)
    bad_file(path, "the tensors cover " + std::to_string(covered) + " data bytes but the file holds " +
                       std::to_string(data_size) + (covered > data_size ? " (truncated)" : ""));
  std::vector<data::StoredTensor> out;
  for (const Entry& e : entries)
    out.push_back({e.name, e.type, e.stored->code, e.stored->size, static_cast<int64_t>(8 + header_size) + e.begin});
  return out;
}

void data::StoredTensor::read(std::string_view file, int64_t first, int64_t n, void* dst,
                              const std::string& path) const {
  if (n > 0) {
    // The layout checked that the tensor's bytes lie inside the file: n elements are there.
    std::string_view elements = file.substr(static_cast<size_t>(offset + first * element_bytes));
    stored_from_code(code)->decode(elements.data(), n, dst,  // NOLINT(bugprone-suspicious-stringview-data-usage)
                                   Origin{path, name, code.c_str(), first});
  }
}

NamedArrays data::parse_safetensors(std::string_view file, const std::string& path,
                                    std::map<std::string, std::string>* metadata) {
  NamedArrays out;
  for (const StoredTensor& t : parse_safetensors_layout(file, path, metadata)) {
    Array a = Array::empty(t.type.dtype, t.type.shape);
    t.read(file, 0, a.size(), a.mutable_data(), path);
    out.emplace_back(t.name, std::move(a));
  }
  return out;
}

}  // namespace fluxion
