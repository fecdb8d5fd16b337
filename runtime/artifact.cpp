#include "runtime/artifact.h"

#include <charconv>
#include <cstring>
#include <functional>
#include <map>

#include "fluxion/error.h"
#include "ir/ir.h"
#include "runtime/cpu/object_list.h"
#include "runtime/debug_print.h"
#include "support/fnv1a.h"

namespace fluxion::runtime {
namespace {

constexpr std::string_view kMagic = "FLUXION ARTIFACT\n";
// Bounds that keep a damaged file from asking for absurd work.
constexpr size_t kMaxFields = 4096;
constexpr size_t kMaxRank = 64;
constexpr int64_t kMaxElements = int64_t{1} << 48;

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

// Little-endian records of fixed-width integers, for the recording's tables.
class Bytes {
 public:
  void u8(uint64_t v) { put(v, 1); }
  void u32(uint64_t v) { put(v, 4); }
  void i64(int64_t v) { put(static_cast<uint64_t>(v), 8); }
  const std::string& str() const { return s_; }

 private:
  void put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) s_ += static_cast<char>((v >> (8 * i)) & 0xff);
  }
  std::string s_;
};

// Reads what Bytes wrote; `bad` raises the field's Error when the bytes run out.
class BytesReader {
 public:
  BytesReader(std::string_view b, std::function<void(const std::string&)> bad) : b_(b), bad_(std::move(bad)) {}
  uint64_t u8() { return get(1); }
  uint64_t u32() { return get(4); }
  int64_t i64() { return static_cast<int64_t>(get(8)); }
  bool done() const { return at_ == b_.size(); }
  size_t left() const { return b_.size() - at_; }

 private:
  uint64_t get(int n) {
    if (b_.size() - at_ < static_cast<size_t>(n)) bad_("it is cut off");
    uint64_t v = get_le(b_, at_, n);
    at_ += static_cast<size_t>(n);
    return v;
  }
  std::string_view b_;
  size_t at_ = 0;
  std::function<void(const std::string&)> bad_;
};

std::string target_text(const vulkan::ShaderTarget& t) {
  return "int64 " + std::to_string(t.int64) + "\ndescriptor_slots " + std::to_string(t.descriptor_slots) +
         "\nint8_storage " + std::to_string(t.int8_storage) + "\nint16_storage " + std::to_string(t.int16_storage) +
         "\nhalves " + std::to_string(t.halves) + "\nfloat64 " + std::to_string(t.float64) + "\nfloat16 " +
         std::to_string(t.float16) + "\npreserve_nan32 " + std::to_string(t.preserve_nan32) + "\npreserve_nan64 " +
         std::to_string(t.preserve_nan64) + "\nsubgroup_arithmetic " + std::to_string(t.subgroup_arithmetic) +
         "\nmax_shared_bytes " + std::to_string(t.max_shared_bytes) + "\ncooperative_m " +
         std::to_string(t.cooperative_m) + "\ncooperative_n " + std::to_string(t.cooperative_n) + "\ncooperative_k " +
         std::to_string(t.cooperative_k) + "\n";
}

void put_loc(Bytes& b, const vulkan::Loc& l) {
  b.i64(l.io);
  b.i64(l.off);
}

std::string recording_bytes(const runtime::VulkanCode& v) {
  const vulkan::Recording& r = v.recording;
  Bytes b;
  b.i64(static_cast<int64_t>(r.dispatches.size()));
  for (size_t i = 0; i < r.dispatches.size(); ++i) {
    const vulkan::Dispatch& d = r.dispatches[i];
    b.u32(v.dispatch_shaders[i]);
    for (uint32_t g : d.groups) b.u32(g);
    b.i64(d.args_word);
    b.u8(d.barrier_before);
    b.i64(d.name);
  }
  b.i64(static_cast<int64_t>(r.collectives.size()));
  for (const vulkan::HostCollective& c : r.collectives) {
    b.u32(static_cast<uint32_t>(c.call.op));
    b.u8(static_cast<uint8_t>(c.call.dtype));
    for (int64_t x : {c.call.count, c.call.ranks, c.call.root, c.call.position, c.call.collectives}) b.i64(x);
    put_loc(b, c.in);
    put_loc(b, c.out);
    b.i64(c.in_bytes);
    b.i64(c.out_bytes);
  }
  b.i64(static_cast<int64_t>(r.prints.size()));
  for (const vulkan::HostPrint& p : r.prints) {
    std::string call = runtime::encode_print(p.call);
    b.i64(static_cast<int64_t>(call.size()));
    for (char c : call) b.u8(static_cast<unsigned char>(c));
    put_loc(b, p.guard);
    b.i64(static_cast<int64_t>(p.operands.size()));
    for (const vulkan::Loc& l : p.operands) put_loc(b, l);
  }
  b.i64(static_cast<int64_t>(r.host_steps.size()));
  for (const vulkan::HostStep& h : r.host_steps) {
    b.u8(static_cast<uint8_t>(h.kind));
    b.i64(static_cast<int64_t>(h.dispatch));
    b.i64(static_cast<int64_t>(h.index));
  }
  b.i64(static_cast<int64_t>(r.args.size()));
  for (int64_t a : r.args) b.i64(a);
  return b.str();
}

std::string shaders_bytes(const runtime::VulkanCode& v) {
  Bytes b;
  b.i64(static_cast<int64_t>(v.shaders.size()));
  for (const std::vector<uint32_t>& words : v.shaders) {
    b.i64(static_cast<int64_t>(words.size()));
    for (uint32_t w : words) b.u32(w);
  }
  return b.str();
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
    for (DType d : {DType::f32, DType::f64, DType::i32, DType::boolean, DType::f16, DType::bf16}) {
      if (dt == dtype_name(d)) {
        t.dtype = d;
        known = true;
      }
    }
    if (!known) bad("field '" + name + "' names an unknown dtype '" + dt + "'");
    std::string dims = s.substr(open + 1, s.size() - open - 2);
    int64_t elements = 1;
    auto bad_shape = [&] { bad("field '" + name + "' holds a bad shape '" + s + "'"); };
    size_t at = 0;
    while (at < dims.size()) {
      size_t comma = dims.find(',', at);
      if (comma == std::string::npos) comma = dims.size();
      int64_t d = integer(name, std::string_view(dims).substr(at, comma - at));
      if (d < 0 || d > kMaxElements || t.shape.size() >= kMaxRank || (d > 0 && elements > kMaxElements / d)) {
        bad_shape();
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

vulkan::ShaderTarget parse_target(const Fields& f) {
  std::map<std::string, int64_t> v;
  for (const std::string& line : split_lines(f.text("vulkan.target"))) {
    size_t space = line.find(' ');
    if (space == std::string::npos) f.bad("field 'vulkan.target' holds '" + line + "'");
    v[line.substr(0, space)] = f.integer("vulkan.target", std::string_view(line).substr(space + 1));
  }
  auto get = [&](const char* name) {
    auto it = v.find(name);
    if (it == v.end() || it->second < 0 || it->second > UINT32_MAX)
      f.bad(std::string("field 'vulkan.target' lacks a valid ") + name);
    return it->second;
  };
  vulkan::ShaderTarget t;
  t.int64 = get("int64") != 0;
  t.descriptor_slots = static_cast<uint32_t>(get("descriptor_slots"));
  t.int8_storage = get("int8_storage") != 0;
  // Written since f16 and bf16 programs run on Vulkan; before, no shader had either.
  t.int16_storage = v.count("int16_storage") && get("int16_storage") != 0;
  t.halves = v.count("halves") && get("halves") != 0;
  t.float64 = get("float64") != 0;
  // Written since products may sum in f16; before, no shader did f16 arithmetic.
  t.float16 = v.count("float16") && get("float16") != 0;
  t.preserve_nan32 = get("preserve_nan32") != 0;
  t.preserve_nan64 = get("preserve_nan64") != 0;
  t.subgroup_arithmetic = get("subgroup_arithmetic") != 0;
  t.max_shared_bytes = static_cast<uint32_t>(get("max_shared_bytes"));
  // Written since products may run on cooperative matrices; before, none did.
  if (v.count("cooperative_m")) {
    t.cooperative_m = static_cast<uint32_t>(get("cooperative_m"));
    t.cooperative_n = static_cast<uint32_t>(get("cooperative_n"));
    t.cooperative_k = static_cast<uint32_t>(get("cooperative_k"));
  }
  return t;
}

// A count read from a table, bounded by the bytes left (each item takes at least `min_bytes`).
size_t count_of(BytesReader& r, size_t min_bytes, const Fields& f, const char* what) {
  int64_t n = r.i64();
  if (n < 0 || static_cast<uint64_t>(n) > r.left() / min_bytes)
    f.bad(std::string("field '") + what + "' holds a bad count");
  return static_cast<size_t>(n);
}

VulkanCode vulkan_code(const Fields& f, const Artifact& a) {
  VulkanCode v;
  v.target = parse_target(f);
  v.device = f.text("vulkan.device");
  v.loop_iteration_limit = f.integer("vulkan.loop_iteration_limit");
  v.layout.inputs = a.inputs;
  v.layout.outputs = a.outputs;
  v.layout.arena_bytes = f.integer("vulkan.arena_bytes");
  v.layout.label = f.text("vulkan.label");
  if (v.layout.arena_bytes < 0 || v.loop_iteration_limit < 0)
    f.bad("field 'vulkan.arena_bytes' or 'vulkan.loop_iteration_limit' is negative");
  std::string_view consts = f.text("vulkan.consts");
  v.recording.consts.resize(consts.size());
  std::memcpy(v.recording.consts.data(), consts.data(), consts.size());
  v.recording.names = split_lines(f.text("vulkan.names"));

  BytesReader s(f.text("vulkan.shaders"), [&](const std::string& w) { f.bad("field 'vulkan.shaders': " + w); });
  v.shaders.resize(count_of(s, 8, f, "vulkan.shaders"));
  for (std::vector<uint32_t>& words : v.shaders) {
    words.resize(count_of(s, 4, f, "vulkan.shaders"));
    if (words.empty()) f.bad("field 'vulkan.shaders' holds an empty shader");
    for (uint32_t& w : words) w = static_cast<uint32_t>(s.u32());
  }

  // Every index in the recording points inside what it indexes.
  int64_t entries = static_cast<int64_t>(a.inputs.size() + a.outputs.size()) + 3;
  BytesReader r(f.text("vulkan.recording"), [&](const std::string& w) { f.bad("field 'vulkan.recording': " + w); });
  vulkan::Recording& rec = v.recording;
  rec.dispatches.resize(count_of(r, 33, f, "vulkan.recording"));
  for (vulkan::Dispatch& d : rec.dispatches) {
    uint64_t shader = r.u32();
    if (shader >= v.shaders.size()) f.bad("a dispatch names shader " + std::to_string(shader));
    v.dispatch_shaders.push_back(static_cast<uint32_t>(shader));
    for (uint32_t& g : d.groups) g = static_cast<uint32_t>(r.u32());
    d.args_word = r.i64();
    d.barrier_before = r.u8() != 0;
    d.name = static_cast<int>(r.i64());
    if (d.name < -1 || d.name >= static_cast<int>(rec.names.size()))
      f.bad("a dispatch names kernel name " + std::to_string(d.name));
  }
  rec.collectives.resize(count_of(r, 93, f, "vulkan.recording"));
  auto loc = [&]() {
    vulkan::Loc l;
    int64_t io = r.i64();
    l.off = r.i64();
    if (io < 0 || io >= entries || l.off < 0) f.bad("a host step's operand lies outside the program's memory");
    l.io = static_cast<int32_t>(io);
    return l;
  };
  for (vulkan::HostCollective& c : rec.collectives) {
    uint64_t op = r.u32();
    if (op >= ir::all_ops().size() || ir::op_info(static_cast<ir::Op>(op)).cls != ir::OpClass::Collective) {
      f.bad("a host step names op " + std::to_string(op) + ", not a collective");
    }
    c.call.op = static_cast<ir::Op>(op);
    uint64_t dt = r.u8();
    if (dt > static_cast<uint64_t>(kLastDType)) f.bad("a collective names dtype " + std::to_string(dt));
    c.call.dtype = static_cast<DType>(dt);
    for (int64_t* x : {&c.call.count, &c.call.ranks, &c.call.root, &c.call.position, &c.call.collectives}) *x = r.i64();
    c.in = loc();
    c.out = loc();
    c.in_bytes = r.i64();
    c.out_bytes = r.i64();
    if (c.in_bytes < 0 || c.out_bytes < 0 || c.call.count < 0) f.bad("a collective has a negative size");
  }
  rec.prints.resize(count_of(r, 40, f, "vulkan.recording"));
  for (vulkan::HostPrint& p : rec.prints) {
    std::string call(count_of(r, 1, f, "vulkan.recording"), '\0');
    for (char& c : call) c = static_cast<char>(r.u8());
    try {
      p.call = runtime::decode_print(call);
    } catch (const Error&) {
      f.bad("a print's description is malformed");
    }
    p.guard = loc();
    p.operands.resize(count_of(r, 16, f, "vulkan.recording"));
    if (p.operands.size() != p.call.types.size()) f.bad("a print's operands do not match its description");
    for (vulkan::Loc& l : p.operands) l = loc();
  }
  rec.host_steps.resize(count_of(r, 17, f, "vulkan.recording"));
  for (vulkan::HostStep& h : rec.host_steps) {
    uint64_t kind = r.u8();
    int64_t dispatch = r.i64(), index = r.i64();
    size_t steps =
        kind == static_cast<uint64_t>(vulkan::HostStep::Kind::Print) ? rec.prints.size() : rec.collectives.size();
    if (kind > 2 || dispatch < 0 || static_cast<uint64_t>(dispatch) > rec.dispatches.size() || index < 0 ||
        static_cast<uint64_t>(index) >= steps) {
      f.bad("a host step points outside the recording");
    }
    h.kind = static_cast<vulkan::HostStep::Kind>(kind);
    h.dispatch = static_cast<size_t>(dispatch);
    h.index = static_cast<size_t>(index);
  }
  rec.args.resize(count_of(r, 8, f, "vulkan.recording"));
  for (int64_t& x : rec.args) x = r.i64();
  for (const vulkan::Dispatch& d : rec.dispatches) {
    if (d.args_word < 0 || static_cast<uint64_t>(d.args_word) >= rec.args.size())
      f.bad("a dispatch's arguments lie outside the table");
  }
  if (!r.done()) f.bad("field 'vulkan.recording' has bytes left over");
  if (!s.done()) f.bad("field 'vulkan.shaders' has bytes left over");
  return v;
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
  put_field(p, "compiled", a.compiled ? backend_name(a.backend) : "none");
  if (a.compiled && a.backend == Backend::Cpu) {
    put_field(p, "cpu.arch", a.cpu.arch);
    put_field(p, "cpu.name", a.cpu.cpu);
    put_field(p, "cpu.llvm_features", a.cpu.llvm_features);
    put_field(p, "cpu.required", join(a.cpu.required));
    put_field(p, "cpu.helpers_abi", std::to_string(a.cpu.helpers_abi));
    put_field(p, "cpu.arena_bytes", std::to_string(a.cpu.layout.arena_bytes));
    put_field(p, "cpu.output_slots", slots_text(a.cpu.layout.output_slots));
    put_field(p, "cpu.label", a.cpu.layout.label);
    put_field(p, "cpu.objects", cpu::encode_objects(a.cpu.objects));
  }
  if (a.compiled && a.backend == Backend::Vulkan) {
    const VulkanCode& v = a.vulkan;
    put_field(p, "vulkan.target", target_text(v.target));
    put_field(p, "vulkan.device", v.device);
    put_field(p, "vulkan.loop_iteration_limit", std::to_string(v.loop_iteration_limit));
    put_field(p, "vulkan.arena_bytes", std::to_string(v.layout.arena_bytes));
    put_field(p, "vulkan.label", v.layout.label);
    put_field(p, "vulkan.recording", recording_bytes(v));
    put_field(p, "vulkan.consts",
              std::string_view(reinterpret_cast<const char*>(v.recording.consts.data()), v.recording.consts.size()));
    put_field(p, "vulkan.names", join(v.recording.names));
    put_field(p, "vulkan.shaders", shaders_bytes(v));
  }
  std::string out(kMagic);
  put_u32(out, kArtifactFormat);
  put_u64(out, p.size());
  put_u64(out, support::fnv1a(p));
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
  if (support::fnv1a(payload) != sum) fail("the checksum does not match: the file is damaged");
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
  std::string_view compiled = f.text("compiled");
  if (compiled != "none" && compiled != backend_name(a.backend))
    f.bad("field 'compiled' names '" + std::string(compiled) + "'");
  a.compiled = compiled != "none";
  if (a.compiled && a.backend == Backend::Interp) f.bad("it holds a compiled form for the interpreter, which has none");
  if (a.compiled && a.backend == Backend::Vulkan) a.vulkan = vulkan_code(f, a);
  if (a.compiled && a.backend == Backend::Cpu) {
    a.cpu.arch = f.text("cpu.arch");
    a.cpu.cpu = f.text("cpu.name");
    a.cpu.llvm_features = f.text("cpu.llvm_features");
    a.cpu.required = split_lines(f.text("cpu.required"));
    a.cpu.helpers_abi = static_cast<uint32_t>(f.integer("cpu.helpers_abi"));
    a.cpu.layout.outputs = a.outputs;
    a.cpu.layout.arena_bytes = f.integer("cpu.arena_bytes");
    a.cpu.layout.output_slots = f.integers("cpu.output_slots");
    a.cpu.layout.label = f.text("cpu.label");
    std::optional<std::vector<std::string>> objects = cpu::decode_objects(f.text("cpu.objects"));
    if (!objects) f.bad("field 'cpu.objects' is not a list of object files");
    a.cpu.objects = std::move(*objects);
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
