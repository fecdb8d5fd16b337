// How shaders reach memory (shader_storage): the version and extensions, the typed accessors
// fx_ld_<t> / fx_st_<t> / fx_atomic_* every other piece of generated code goes through, the
// push constants and the io and argument tables, and byte access. An address (FX_ADDR) is one
// of three things, chosen from the device's capabilities:
//   a buffer device address as uint64_t (bufferDeviceAddress and shaderInt64);
//   the same address as a uvec2 of 32-bit words, added with carry (no shaderInt64);
//   uvec2(byte offset, slot) into an array of storage-buffer descriptors, one per memory block
//   (no bufferDeviceAddress: runtime/vulkan/block_descriptors.h).
// f16 and bf16 accessors (glsl_halves.cpp) are declared only for programs that have them.
// The host writes all three as the same 64-bit words, so the tables and the recorder do not
// depend on the choice.
#include <string>

#include "backends/vulkan/glsl.h"

namespace fluxion::vulkan {
namespace {

const char* kExtensionsAddress = "#extension GL_EXT_buffer_reference : require\n";
const char* kExtensionsInt64 = "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n";
const char* kExtensionsUvec2 = "#extension GL_EXT_buffer_reference_uvec2 : require\n";
const char* kExtensions8 =
    "#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require\n#extension GL_EXT_shader_8bit_storage : "
    "require\n";
const char* kExtensions16 = "#extension GL_EXT_shader_16bit_storage : require\n";

// One element type of memory: its accessor suffix, GLSL type and size in bytes, and the type
// its accessors take and give where that differs (16-bit integers exist only in memory).
struct Element {
  const char* suffix;
  const char* type;
  int bytes;
  const char* value = nullptr;
};

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return s;
}

// The element of type `e` at index `i` past address `a`, as a GLSL lvalue.
std::string element(const ShaderTarget& target, const Element& e, const char* a, const char* i) {
  if (target.descriptor_slots == 0) return "Fx" + upper(e.suffix) + "(" + a + ").v[" + i + "]";
  int shift = e.bytes == 8 ? 3 : e.bytes == 4 ? 2 : e.bytes == 2 ? 1 : 0;
  std::string offset = shift ? "(" + std::string(a) + ".x >> " + std::to_string(shift) + "u)" : std::string(a) + ".x";
  return std::string("fx_") + e.suffix + "[" + a + ".y].v[int(" + offset + ") + " + i + "]";
}

// Declarations of type `e`'s memory view and its load and store.
std::string accessors(const ShaderTarget& target, const Element& e) {
  std::string t = e.type, s = e.suffix, out;
  if (target.descriptor_slots == 0) {
    out += "layout(buffer_reference, std430, buffer_reference_align = " + std::to_string(e.bytes) +
           ") COHERENT buffer Fx" + upper(s) + " { " + t + " v[]; };\n";
  } else {
    out += "layout(set = 0, binding = 0, std430) COHERENT buffer Fx" + upper(s) + " { " + t + " v[]; } fx_" + s + "[" +
           std::to_string(target.descriptor_slots) + "];\n";
  }
  std::string v = e.value ? e.value : t;
  std::string load = element(target, e, "a", "i"), stored = "x";
  if (e.value) load = v + "(" + load + ")", stored = t + "(x)";
  out += v + " fx_ld_" + s + "(FX_ADDR a, int i) { return " + load + "; }\n";
  out += "void fx_st_" + s + "(FX_ADDR a, int i, " + v + " x) { " + element(target, e, "a", "i") + " = " + stored +
         "; }\n";
  return out;
}

// Atomics need the memory itself as their first argument: one function per use.
std::string atomics(const ShaderTarget& target) {
  const Element i32{"i32", "int", 4}, u32{"u32", "uint", 4};
  std::string out =
      "void fx_atomic_min_i32(FX_ADDR a, int i, int x) { atomicMin(" + element(target, i32, "a", "i") + ", x); }\n" +
      "void fx_atomic_add_i32(FX_ADDR a, int i, int x) { atomicAdd(" + element(target, i32, "a", "i") + ", x); }\n" +
      "void fx_atomic_and_u32(FX_ADDR a, int i, uint x) { atomicAnd(" + element(target, u32, "a", "i") + ", x); }\n" +
      "void fx_atomic_or_u32(FX_ADDR a, int i, uint x) { atomicOr(" + element(target, u32, "a", "i") + ", x); }\n";
  // 16-bit values in 32-bit words are stored by compare-and-swap (glsl_halves.cpp).
  if (target.halves && !target.int16_storage) {
    out += "uint fx_atomic_cas_u32(FX_ADDR a, int i, uint old, uint x) { return atomicCompSwap(" +
           element(target, u32, "a", "i") + ", old, x); }\n";
  }
  return out;
}

// The io table, the argument tables and the push constants hold 64-bit words, read as such.
const char* kTables64 = R"(layout(buffer_reference, std430, buffer_reference_align = 8) buffer FxI64 { int64_t v[]; };
layout(push_constant) uniform Push { uint64_t io; uint64_t args; } pc;
// Argument k: (io entry, byte offset) or (-1, absolute address).
uint64_t fx_addr(int k) {
  int64_t which = FxI64(pc.args).v[2 * k];
  uint64_t off = uint64_t(FxI64(pc.args).v[2 * k + 1]);
  return which < 0 ? off : uint64_t(FxI64(pc.io).v[int(which)]) + off;
}
int64_t fx_word(int k) { return FxI64(pc.args).v[k]; }
uint64_t fx_offset(uint64_t a, uint64_t bytes) { return a + bytes; }
uint64_t fx_offset(uint64_t a, uint bytes) { return a + uint64_t(bytes); }
uint fx_low(uint64_t a) { return uint(a); }
uint64_t fx_align4(uint64_t a) { return a & ~uint64_t(3); }
)";

// The same tables read as pairs of 32-bit words (low first), addresses added with carry (a
// descriptor address never carries: its offset stays inside its block).
const char* kTables32 = R"(layout(push_constant) uniform Push { uvec2 io; uvec2 args; } pc;
uvec2 fx_offset(uvec2 a, uint bytes) {
  uint carry;
  uint lo = uaddCarry(a.x, bytes, carry);
  return uvec2(lo, a.y + carry);
}
uvec2 fx_addr(int k) {
  int which = int(fx_ld_u32(pc.args, 4 * k));
  uvec2 off = uvec2(fx_ld_u32(pc.args, 4 * k + 2), fx_ld_u32(pc.args, 4 * k + 3));
  if (which < 0) return off;
  uvec2 base = fx_offset(uvec2(fx_ld_u32(pc.io, 2 * which), fx_ld_u32(pc.io, 2 * which + 1)), off.x);
  return uvec2(base.x, base.y + off.y);
}
int fx_word(int k) { return int(fx_ld_u32(pc.args, 2 * k)); }
uint fx_low(uvec2 a) { return a.x; }
uvec2 fx_align4(uvec2 a) { return uvec2(a.x & ~3u, a.y); }
)";

// Byte i past address a (booleans and flags are bytes): through 8-bit storage, or on a device
// without it through the 32-bit word holding the byte, stored with atomics that change only
// that byte (neighbouring bytes may belong to other invocations).
const char* kBytes8 = R"(uint fx_ld8(FX_ADDR a, int i) { return uint(fx_ld_u8(a, i)); }
void fx_st8(FX_ADDR a, int i, uint x) { fx_st_u8(a, i, uint8_t(x)); }
)";
const char* kBytes32 = R"(uint fx_ld8(FX_ADDR a, int i) {
  FX_ADDR p = fx_offset(a, uint(i));
  return (fx_ld_u32(fx_align4(p), 0) >> ((fx_low(p) & 3u) * 8u)) & 0xffu;
}
void fx_st8(FX_ADDR a, int i, uint x) {
  FX_ADDR p = fx_offset(a, uint(i));
  uint shift = (fx_low(p) & 3u) * 8u;
  fx_atomic_and_u32(fx_align4(p), 0, ~(0xffu << shift));
  fx_atomic_or_u32(fx_align4(p), 0, (x & 0xffu) << shift);
}
)";

}  // namespace

std::string shader_storage(const ShaderTarget& target) {
  bool addresses = target.descriptor_slots == 0;
  std::string s = "#version 460\n";
  if (addresses) s += kExtensionsAddress;
  if (target.addresses64()) s += kExtensionsInt64;
  if (addresses && !target.addresses64()) s += kExtensionsUvec2;
  if (target.int8_storage) s += kExtensions8;
  if (target.halves && target.int16_storage) s += kExtensions16;
  s += target.addresses64() ? "#define FX_ADDR uint64_t\n" : "#define FX_ADDR uvec2\n";
  for (const Element& e : {Element{"f32", "float", 4}, Element{"i32", "int", 4}, Element{"u32", "uint", 4}}) {
    s += accessors(target, e);
  }
  if (target.int8_storage) s += accessors(target, Element{"u8", "uint8_t", 1});
  if (target.halves && target.int16_storage) s += accessors(target, Element{"u16", "uint16_t", 2, "uint"});
  if (target.float64) s += accessors(target, Element{"f64", "double", 8});
  s += atomics(target);
  s += target.addresses64() ? kTables64 : kTables32;
  s += target.int8_storage ? kBytes8 : kBytes32;
  if (target.halves) s += shader_halves(target);
  return s;
}

}  // namespace fluxion::vulkan
