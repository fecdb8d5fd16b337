#include "runtime/artifact.h"

#include <charconv>
#include <cstring>
#include <map>

#include "fluxion/error.h"

namespace fluxion::runtime {
namespace {

constexpr std::string_view kMagic = "FLUXION ARTIFACT\n";
// Bounds that keep a damaged file from asking for absurd work.
constexpr size_t kMaxFields = 4096;
constexpr size_t kMaxRank = 64;
constexpr int64_t kMaxElements = int64_t{1} << 48;

// FNV-1a over the payload: it finds damage (a flipped byte, a truncated copy), not forgery.
uint64_t checksum(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
uint64_t get_le(std::string_view b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(b[at + static_cast<size_t>(i)])) << (8 * i);
  return v;
}

void put_field(std::string& out, std::string_view name, std::string_view value) {
  put_u32(out, static_cast<uint32_t>(name.size()));
  out += name;
  put_u64(out, value.size());
  out += value;
}

std::string join(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

std::vector<std::string> split_lines(std::string_view s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < s.size()) {
    size_t nl = s.find('\n', at);
    if (nl == std::string_view::npos) nl = s.size();
    out.emplace_back(s.substr(at, nl - at));
    at = nl + 1;
  }
  return out;
}

std::string types_text(const std::vector<TensorType>& ts) {
  std::vector<std::string> lines;
  for (const TensorType& t : ts) lines.push_back(t.str());
  return join(lines);
}

std::string slots_text(const std::vector<int64_t>& v) {
  std::vector<std::string> lines;
  for (int64_t x : v) lines.push_back(std::to_string(x));
  return join(lines);
}

// The fields of a payload, read with their names in errors.
class Fields {
 public:
  Fields(std::string_view payload, const std::string& source) : source_(source) {
    size_t at = 0;
    while (at < payload.size()) {
      if (fields_.size() >= kMaxFields) bad("more than " + std::to_string(kMaxFields) + " fields");
      if (payload.size() - at < 4) bad("a field header is cut off");
      size_t name_len = get_le(payload, at, 4);
      at += 4;
      if (payload.size() - at < name_len) bad("a field name is cut off");
      std::string name(payload.substr(at, name_len));
      at += name_len;
      if (payload.size() - at < 8) bad("field '" + name + "' is cut off");
      uint64_t len = get_le(payload, at, 8);
      at += 8;
      if (payload.size() - at < len) bad("field '" + name + "' is cut off");
      fields_[name] = payload.substr(at, len);
      at += len;
    }
  }

  std::string_view text(const std::string& name) const {
    auto it = fields_.find(name);
    if (it == fields_.end()) bad("field '" + name + "' is missing");
    return it->second;
  }
  bool has(const std::string& name) const { return fields_.count(name) != 0; }

  int64_t integer(const std::string& name, std::string_view s) const {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size())
      bad("field '" + name + "' holds '" + std::string(s) + "', not an integer");
    return v;
  }
  int64_t integer(const std::string& name) const { return integer(name, text(name)); }
  uint64_t unsigned_integer(const std::string& name) const {
    std::string_view s = text(name);
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size())
      bad("field '" + name + "' holds '" + std::string(s) + "', not an integer");
    return v;
  }

  std::vector<TensorType> types(const std::string& name) const {
    std::vector<TensorType> out;
    for (const std::string& line : split_lines(text(name))) out.push_back(parse_type(name, line));
    return out;
  }

  std::vector<int64_t> integers(const std::string& name) const {
    std::vector<int64_t> out;
    for (const std::string& line : split_lines(text(name))) out.push_back(integer(name, line));
    return out;
  }

  [[noreturn]] void bad(const std::string& what) const {
    detail::fail("load", source_ + " is not a readable Fluxion artifact: " + what);
  }

 private:
  // "f32[3,4]" (TensorType::str()).
  TensorType parse_type(const std::string& name, const std::string& s) const {
    size_t open = s.find('[');
    if (open == std::string::npos || s.back() != ']') bad("field '" + name + "' holds '" + s + "', not a type");
    TensorType t;
    std::string dt = s.substr(0, open);
    bool known = false;
    for (DType d : {DType::f32, DType::f64, DType::i32, DType::boolean}) {
      if (dt == dtype_name(d)) {
        t.dtype = d;
        known = true;
      }
    }
    if (!known) bad("field '" + name + "' names an unknown dtype '" + dt + "'");
    std::string dims = s.substr(open + 1, s.size() - open - 2);
    int64_t elements = 1;
    size_t at = 0;
    while (at < dims.size()) {
      size_t comma = dims.find(',', at);
      if (comma == std::string::npos) comma = dims.size();
      int64_t d = integer(name, std::string_view(dims).substr(at, comma - at));
      if (d < 0 || d > kMaxElements || t.shape.size() >= kMaxRank || (d > 0 && elements > kMaxElements / d)) {
        bad("field '" + name + "' holds a bad shape '" + s + "'");
      }
      elements *= d;
      t.shape.push_back(d);
      at = comma + 1;
    }
    return t;
  }

  std::string source_;
  std::map<std::string, std::string_view> fields_;
};

Backend backend_named(const Fields& f, std::string_view name) {
  for (Backend b : {Backend::Interp, Backend::Cpu, Backend::Vulkan}) {
    if (name == backend_name(b)) return b;
  }
  f.bad("unknown backend '" + std::string(name) + "'");
}

// Names for `n` arrays: the field's lines, or "" each when it holds none.
std::vector<std::string> names(const Fields& f, const std::string& field, size_t n) {
  std::vector<std::string> out = split_lines(f.text(field));
  if (out.empty()) out.resize(n);
  if (out.size() != n)
    f.bad("field '" + field + "' names " + std::to_string(out.size()) + " arrays, not " + std::to_string(n));
  return out;
}

}  // namespace

std::string encode_artifact(const Artifact& a) {
  std::string p;
  put_field(p, "fluxion.version", a.fluxion_version);
  put_field(p, "backend", backend_name(a.backend));
  put_field(p, "hash", std::to_string(a.hash));
  put_field(p, "inputs", types_text(a.inputs));
  put_field(p, "outputs", types_text(a.outputs));
  put_field(p, "input_names", join(a.input_names));
  put_field(p, "output_names", join(a.output_names));
  put_field(p, "ir.traced", a.traced_ir);
  put_field(p, "ir", a.ir);
  put_field(p, "kernels", a.kernels);
  if (a.backend == Backend::Cpu) {
    put_field(p, "cpu.arch", a.cpu.arch);
    put_field(p, "cpu.name", a.cpu.cpu);
    put_field(p, "cpu.llvm_features", a.cpu.llvm_features);
    put_field(p, "cpu.required", join(a.cpu.required));
    put_field(p, "cpu.helpers_abi", std::to_string(a.cpu.helpers_abi));
    put_field(p, "cpu.arena_bytes", std::to_string(a.cpu.layout.arena_bytes));
    put_field(p, "cpu.output_slots", slots_text(a.cpu.layout.output_slots));
    put_field(p, "cpu.label", a.cpu.layout.label);
    put_field(p, "cpu.object", a.cpu.object);
  }
  std::string out(kMagic);
  put_u32(out, kArtifactFormat);
  put_u64(out, p.size());
  put_u64(out, checksum(p));
  return out + p;
}

Artifact decode_artifact(std::string_view bytes, const std::string& source) {
  auto fail = [&](const std::string& what) { detail::fail("load", source + ": " + what); };
  if (bytes.size() < kMagic.size() || bytes.substr(0, kMagic.size()) != kMagic)
    fail("not a Fluxion artifact (no header)");
  size_t at = kMagic.size();
  if (bytes.size() - at < 20) fail("the header is cut off");
  uint32_t format = static_cast<uint32_t>(get_le(bytes, at, 4));
  uint64_t size = get_le(bytes, at + 4, 8), sum = get_le(bytes, at + 12, 8);
  at += 20;
  if (format != kArtifactFormat) {
    fail("artifact format " + std::to_string(format) + ", but this library reads format " +
         std::to_string(kArtifactFormat) + " (re-export the program with this version of Fluxion)");
  }
  if (bytes.size() - at != size) {
    fail("the file holds " + std::to_string(bytes.size() - at) + " payload bytes, its header says " +
         std::to_string(size) + " (truncated or appended to)");
  }
  std::string_view payload = bytes.substr(at);
  if (checksum(payload) != sum) fail("the checksum does not match: the file is damaged");
  Fields f(payload, source);
  Artifact a;
  a.fluxion_version = f.text("fluxion.version");
  a.backend = backend_named(f, f.text("backend"));
  a.hash = f.unsigned_integer("hash");
  a.inputs = f.types("inputs");
  a.outputs = f.types("outputs");
  a.input_names = names(f, "input_names", a.inputs.size());
  a.output_names = names(f, "output_names", a.outputs.size());
  a.traced_ir = f.text("ir.traced");
  a.ir = f.text("ir");
  a.kernels = f.text("kernels");
  if (a.backend == Backend::Cpu) {
    a.cpu.arch = f.text("cpu.arch");
    a.cpu.cpu = f.text("cpu.name");
    a.cpu.llvm_features = f.text("cpu.llvm_features");
    a.cpu.required = split_lines(f.text("cpu.required"));
    a.cpu.helpers_abi = static_cast<uint32_t>(f.integer("cpu.helpers_abi"));
    a.cpu.layout.outputs = a.outputs;
    a.cpu.layout.arena_bytes = f.integer("cpu.arena_bytes");
    a.cpu.layout.output_slots = f.integers("cpu.output_slots");
    a.cpu.layout.label = f.text("cpu.label");
    a.cpu.object = f.text("cpu.object");
    if (a.cpu.layout.output_slots.size() != a.outputs.size())
      f.bad("field 'cpu.output_slots' does not list every output");
    if (a.cpu.layout.arena_bytes < 0) f.bad("field 'cpu.arena_bytes' is negative");
    for (size_t k = 0; k < a.outputs.size(); ++k) {
      int64_t slot = a.cpu.layout.output_slots[k];
      int64_t bytes_k = a.outputs[k].numel() * dtype_size(a.outputs[k].dtype);
      if (slot < -1 || (slot >= 0 && (slot > a.cpu.layout.arena_bytes || bytes_k > a.cpu.layout.arena_bytes - slot))) {
        f.bad("output " + std::to_string(k) + "'s arena slot lies outside the arena");
      }
    }
  }
  return a;
}

}  // namespace fluxion::runtime
