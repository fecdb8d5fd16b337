#include "fluxion/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "dsl/src/data/json.h"
#include "dsl/src/data/safetensors_bytes.h"
#include "fluxion/error.h"
#include "support/files.h"

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace fluxion {

namespace {

const char* dtype_code(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::f64: return "F64";
    case DType::i32: return "I32";
    case DType::boolean: return "BOOL";
  }
  return "?";
}

bool dtype_from_code(const std::string& code, DType* out) {
  for (DType t : {DType::f32, DType::f64, DType::i32, DType::boolean}) {
    if (code == dtype_code(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

[[noreturn]] void bad_file(const std::string& path, const std::string& what) {
  detail::fail("load_safetensors", "'" + path + "': " + what);
}

struct Entry {
  std::string name;
  TensorType type;
  int64_t begin = 0, end = 0;
};

Entry parse_entry(const std::string& path, const std::string& name, const json::Value& v) {
  auto field = [&](const char* key) -> const json::Value& {
    const json::Value* f = v.find(key);
    if (!f) bad_file(path, "tensor '" + name + "' has no \"" + key + "\"");
    return *f;
  };
  if (v.kind != json::Value::Kind::Object) bad_file(path, "tensor '" + name + "': expected an object");
  Entry e;
  e.name = name;
  const json::Value& dtype = field("dtype");
  if (dtype.kind != json::Value::Kind::String || !dtype_from_code(dtype.text, &e.type.dtype))
    bad_file(path, "tensor '" + name + "' has dtype " + (dtype.kind == json::Value::Kind::String ? dtype.text : "?") +
                       ": Fluxion reads F32, F64, I32 and BOOL");
  const json::Value& shape = field("shape");
  const json::Value& offsets = field("data_offsets");
  if (shape.kind != json::Value::Kind::Array || offsets.kind != json::Value::Kind::Array || offsets.items.size() != 2)
    bad_file(path, "tensor '" + name + "': expected \"shape\" [dims...] and \"data_offsets\" [begin, end]");
  int64_t bytes = dtype_size(e.type.dtype);
  for (const json::Value& d : shape.items) {
    int64_t dim = d.as_int();
    if (dim < 0 || __builtin_mul_overflow(bytes, dim, &bytes))
      bad_file(path, "tensor '" + name + "' has a bad dimension " + d.text);
    e.type.shape.push_back(dim);
  }
  e.begin = offsets.items[0].as_int();
  e.end = offsets.items[1].as_int();
  if (e.begin < 0 || e.end < e.begin || e.end - e.begin != bytes)
    bad_file(path, "tensor '" + name + "' " + e.type.str() + " needs " + std::to_string(bytes) +
                       " bytes but its data_offsets are [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]");
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
      header += (first ? "" : ",") + json::quote(k) + ":" + json::quote(v);
      first = false;
    }
    header += "}";
  }
  int64_t offset = 0;
  for (const auto& [name, a] : tensors) {
    if (name.empty() || name == "__metadata__" || !names.insert(name).second)
      detail::fail("save_safetensors", "tensor name '" + name + "' is empty, reserved or repeated");
    int64_t bytes = a.size() * dtype_size(a.dtype());
    header += (header.size() > 1 ? "," : "") + json::quote(name) + ":{\"dtype\":\"" + dtype_code(a.dtype()) +
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
    if (a.size() > 0) file.append(static_cast<const char*>(a.data()), static_cast<size_t>(a.size() * dtype_size(a.dtype())));
  }
  support::write_file_atomically(path, file, "save_safetensors");
}

NamedArrays load_safetensors(const std::string& path, std::map<std::string, std::string>* metadata) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) bad_file(path, "no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) bad_file(path, "cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return data::parse_safetensors(ss.str(), path, metadata);
}

NamedArrays data::parse_safetensors(const std::string& file, const std::string& path,
                                    std::map<std::string, std::string>* metadata) {
  if (file.size() < 8) bad_file(path, "truncated: " + std::to_string(file.size()) + " bytes, no header length");
  uint64_t header_size = 0;
  std::memcpy(&header_size, file.data(), 8);
  if (header_size > file.size() - 8)
    bad_file(path, "header length " + std::to_string(header_size) + " exceeds the file's " + std::to_string(file.size() - 8) +
                       " remaining bytes (truncated or not a safetensors file)");
  json::Value header;
  try {
    header = json::parse(std::string_view(file).substr(8, header_size));
  } catch (const json::JsonError& e) {
    bad_file(path, std::string("malformed JSON header: ") + e.what());
  }
  if (header.kind != json::Value::Kind::Object) bad_file(path, "the header is not a JSON object");
  std::vector<Entry> entries;
  std::set<std::string> seen;
  try {
    for (const auto& [name, v] : header.members) {
      if (name.empty()) bad_file(path, "a tensor has an empty name");
      if (!seen.insert(name).second) bad_file(path, "tensor '" + name + "' appears twice");
      if (name == "__metadata__") {
        if (v.kind != json::Value::Kind::Object) bad_file(path, "__metadata__ is not an object");
        for (const auto& [k, s] : v.members) {
          if (s.kind != json::Value::Kind::String) bad_file(path, "metadata '" + k + "' is not a string");
          if (metadata) (*metadata)[k] = s.text;
        }
        continue;
      }
      entries.push_back(parse_entry(path, name, v));
    }
  } catch (const json::JsonError& e) {
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
  NamedArrays out;
  const char* data = file.data() + 8 + header_size;
  for (const Entry& e : entries) {
    Array a = Array::empty(e.type.dtype, e.type.shape);
    if (e.end > e.begin) std::memcpy(a.mutable_data(), data + e.begin, static_cast<size_t>(e.end - e.begin));
    if (e.type.dtype == DType::boolean) {  // any nonzero byte is true
      auto* b = static_cast<unsigned char*>(a.mutable_data());
      for (int64_t i = 0; i < a.size(); ++i) b[i] = b[i] != 0;
    }
    out.emplace_back(e.name, std::move(a));
  }
  return out;
}

}  // namespace fluxion
