// The shader prelude and the math library. GLSL's built-in transcendental functions are loosely
// specified (Vulkan allows sin an absolute error of 2^-11, atan 4096 ulp) and do not exist for
// double at all, so every function but f32 exp, log and sqrt is computed here, the same way on
// every vendor: range reduction and polynomials accurate to a few ulps of the type. The
// generic text is written once; `instantiate` makes the float ("f", T_ = float) and double
// ("d", literals with the lf suffix) versions.
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "backends/vulkan/glsl.h"
#include "support/round_up.h"

namespace fluxion::vulkan {
namespace {

// After the storage part (glsl_storage.cpp): guards, random numbers and the f32 basics.
const char* kCommon = R"(bool fx_guard() { return fx_ld8(fx_addr(0), 0) != 0u; }
// Philox-4x32-10 (runtime/philox.h).
uvec4 fx_philox4(uvec4 c, uvec2 k) {
  for (int round = 0; round < 10; ++round) {
    uint hi0, lo0, hi1, lo1;
    umulExtended(0xD2511F53u, c.x, hi0, lo0);
    umulExtended(0xCD9E8D57u, c.z, hi1, lo1);
    c = uvec4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    k += uvec2(0x9E3779B9u, 0xBB67AE85u);
  }
  return c;
}
float fx_nanf() { return uintBitsToFloat(0x7fc00000u); }
float fx_inff() { return uintBitsToFloat(0x7f800000u); }
bool fx_signbitf(float x) { return (floatBitsToUint(x) >> 31) != 0u; }
float fx_expf(float x) { return isnan(x) ? x : exp(x); }
float fx_logf(float x) { return isnan(x) ? x : x < 0.0 ? fx_nanf() : x == 0.0 ? -fx_inff() : log(x); }
float fx_sqrtf(float x) { return x < 0.0 ? fx_nanf() : sqrt(x); }
// Cody-Waite splits of pi/2 whose products with the quadrant number are exact.
const float FX_P1f = 1.5703125, FX_P2f = 4.837512969970703125e-4, FX_P3f = 7.54978995489188216e-8;
)";

const char* kDoubleBasics = R"(double fx_nand() { return packDouble2x32(uvec2(0u, 0x7ff80000u)); }
double fx_infd() { return packDouble2x32(uvec2(0u, 0x7ff00000u)); }
bool fx_signbitd(double x) { return (unpackDouble2x32(x).y >> 31) != 0u; }
double fx_sqrtd(double x) { return x < 0.0lf ? fx_nand() : sqrt(x); }
double fx_expd(double x) {
  if (isnan(x)) return x;
  if (x > 709.782712893384lf) return fx_infd();
  if (x < -745.2lf) return 0.0lf;
  double k = round(x * 1.4426950408889634lf);
  double r = (x - k * 6.93147180369123816490e-01lf) - k * 1.90821492927058770002e-10lf;
  double p = 1.0lf / 6227020800.0lf;
  p = p * r + 1.0lf / 479001600.0lf;
  p = p * r + 1.0lf / 39916800.0lf;
  p = p * r + 1.0lf / 3628800.0lf;
  p = p * r + 1.0lf / 362880.0lf;
  p = p * r + 1.0lf / 40320.0lf;
  p = p * r + 1.0lf / 5040.0lf;
  p = p * r + 1.0lf / 720.0lf;
  p = p * r + 1.0lf / 120.0lf;
  p = p * r + 1.0lf / 24.0lf;
  p = p * r + 1.0lf / 6.0lf;
  p = p * r + 0.5lf;
  p = p * r + 1.0lf;
  p = p * r + 1.0lf;
  int e = int(k);
  return ldexp(ldexp(p, e / 2), e - e / 2);
}
double fx_logd(double x) {
  if (isnan(x)) return x;
  if (x < 0.0lf) return fx_nand();
  if (x == 0.0lf) return -fx_infd();
  if (isinf(x)) return x;
  int e;
  double m = frexp(x, e);
  if (m < 0.70710678118654752lf) { m *= 2.0lf; e -= 1; }
  double s = (m - 1.0lf) / (m + 1.0lf);
  double s2 = s * s;
  double p = 1.0lf / 23.0lf;
  for (int n = 10; n >= 0; --n) p = 1.0lf / double(2 * n + 1) + s2 * p;
  return double(e) * 6.93147180369123816490e-01lf + (double(e) * 1.90821492927058770002e-10lf + 2.0lf * s * p);
}
const double FX_P1d = 1.57079632673412561417e+00lf, FX_P2d = 6.07710050630396597660e-11lf, FX_P3d = 2.02226624879595063154e-21lf;
)";

// Written once for both types: T_ is the type, _S the suffix, a literal ends in @.
const char* kGeneric = R"(
T_ fx_sin_poly_S(T_ r) {
  T_ r2 = r * r;
  T_ p = -1.0@ / 121645100408832000.0@;
  p = p * r2 + 1.0@ / 355687428096000.0@;
  p = p * r2 - 1.0@ / 1307674368000.0@;
  p = p * r2 + 1.0@ / 6227020800.0@;
  p = p * r2 - 1.0@ / 39916800.0@;
  p = p * r2 + 1.0@ / 362880.0@;
  p = p * r2 - 1.0@ / 5040.0@;
  p = p * r2 + 1.0@ / 120.0@;
  p = p * r2 - 1.0@ / 6.0@;
  return r + r * r2 * p;
}
T_ fx_cos_poly_S(T_ r) {
  T_ r2 = r * r;
  T_ p = 1.0@ / 6402373705728000.0@;
  p = p * r2 - 1.0@ / 20922789888000.0@;
  p = p * r2 + 1.0@ / 87178291200.0@;
  p = p * r2 - 1.0@ / 479001600.0@;
  p = p * r2 + 1.0@ / 3628800.0@;
  p = p * r2 - 1.0@ / 40320.0@;
  p = p * r2 + 1.0@ / 720.0@;
  p = p * r2 - 1.0@ / 24.0@;
  p = p * r2 + 0.5@;
  return 1.0@ - r2 * p;
}
// sin (cos_shift = 0) or cos (cos_shift = 1) through the quadrant of x.
T_ fx_sincos_S(T_ x, int cos_shift) {
  T_ k = round(x * 0.63661977236758134308@);
  T_ r = ((x - k * FX_P1_S) - k * FX_P2_S) - k * FX_P3_S;
  int q = (int(mod(k, 4.0@)) + cos_shift) & 3;
  T_ v = (q & 1) == 0 ? fx_sin_poly_S(r) : fx_cos_poly_S(r);
  return q >= 2 ? -v : v;
}
T_ fx_sin_S(T_ x) { return isinf(x) ? x - x : fx_sincos_S(x, 0); }
T_ fx_cos_S(T_ x) { return isinf(x) ? x - x : fx_sincos_S(x, 1); }
T_ fx_expm1_S(T_ x) {
  if (abs(x) >= 0.5@) return fx_exp_S(x) - 1.0@;
  T_ p = 1.0@ / 355687428096000.0@;
  p = p * x + 1.0@ / 20922789888000.0@;
  p = p * x + 1.0@ / 1307674368000.0@;
  p = p * x + 1.0@ / 87178291200.0@;
  p = p * x + 1.0@ / 6227020800.0@;
  p = p * x + 1.0@ / 479001600.0@;
  p = p * x + 1.0@ / 39916800.0@;
  p = p * x + 1.0@ / 3628800.0@;
  p = p * x + 1.0@ / 362880.0@;
  p = p * x + 1.0@ / 40320.0@;
  p = p * x + 1.0@ / 5040.0@;
  p = p * x + 1.0@ / 720.0@;
  p = p * x + 1.0@ / 120.0@;
  p = p * x + 1.0@ / 24.0@;
  p = p * x + 1.0@ / 6.0@;
  p = p * x + 0.5@;
  return x + x * x * p;
}
T_ fx_log1p_S(T_ x) {
  if (isinf(x) && x > 0.0@) return x;
  T_ u = 1.0@ + x;
  if (u == 1.0@) return x;
  return fx_log_S(u) * (x / (u - 1.0@));
}
T_ fx_tanh_S(T_ x) {
  T_ a = abs(x), r;
  if (a < 0.55@) {
    T_ e = fx_expm1_S(2.0@ * a);
    r = e / (e + 2.0@);
  } else if (a > 40.0@) {
    r = 1.0@;
  } else {
    r = 1.0@ - 2.0@ / (fx_exp_S(2.0@ * a) + 1.0@);
  }
  return fx_signbit_S(x) ? -r : r;
}
T_ fx_floor_S(T_ x) { return floor(x); }
T_ fx_erf_S(T_ x) {
  T_ a = abs(x), r;
  if (isnan(x)) return x;
  if (a < 2.5@) {
    T_ x2 = a * a, term = a, sum = a;
    for (int n = 1; n < 60; ++n) {
      term *= -x2 / T_(n);
      T_ add = term / T_(2 * n + 1);
      sum += add;
      if (abs(add) < 1e-17@ * abs(sum)) break;
    }
    r = sum * 1.12837916709551257390@;
  } else if (a > 6.0@) {
    r = 1.0@;
  } else {
    T_ f = a;
    for (int n = 80; n >= 1; --n) f = a + (T_(n) * 0.5@) / f;
    r = 1.0@ - fx_exp_S(-a * a) * 0.56418958354775628695@ / f;
  }
  return fx_signbit_S(x) ? -r : r;
}
T_ fx_atan_S(T_ x) {
  T_ a = abs(x);
  bool inv = a > 1.0@;
  if (inv) a = 1.0@ / a;
  bool shift = a > 0.26794919243112270@;
  if (shift) a = (a * 1.73205080756887729@ - 1.0@) / (a + 1.73205080756887729@);
  T_ a2 = a * a;
  T_ p = 1.0@ / 29.0@;
  for (int n = 13; n >= 0; --n) p = 1.0@ / T_(2 * n + 1) - a2 * p;
  T_ r = a * p;
  if (shift) r += 0.52359877559829887308@;
  if (inv) r = 1.57079632679489661923@ - r;
  return fx_signbit_S(x) ? -r : r;
}
T_ fx_atan2_S(T_ y, T_ x) {
  const T_ pi = 3.14159265358979323846@;
  if (isnan(x) || isnan(y)) return x + y;
  if (y == 0.0@) return fx_signbit_S(x) ? (fx_signbit_S(y) ? -pi : pi) : y;
  if (isinf(x) && isinf(y)) {
    T_ r = x > 0.0@ ? pi / 4.0@ : 3.0@ * pi / 4.0@;
    return y < 0.0@ ? -r : r;
  }
  if (x == 0.0@) return y > 0.0@ ? pi / 2.0@ : -pi / 2.0@;
  T_ r = fx_atan_S(y / x);
  if (x > 0.0@) return r;
  return y > 0.0@ ? r + pi : r - pi;
}
T_ fx_pow_S(T_ x, T_ y) {
  if (y == 0.0@ || x == 1.0@) return 1.0@;
  if (isnan(x) || isnan(y)) return x + y;
  bool yint = floor(y) == y;
  bool yodd = yint && abs(y) < 9007199254740992.0@ && y - 2.0@ * floor(y * 0.5@) == 1.0@;
  T_ inf = fx_inf_S();
  if (isinf(y)) {
    T_ a = abs(x);
    if (a == 1.0@) return 1.0@;
    return (a > 1.0@) == (y > 0.0@) ? inf : 0.0@;
  }
  if (x == 0.0@ || isinf(x)) {
    bool big = (x == 0.0@) == (y < 0.0@);
    T_ mag = big ? inf : 0.0@;
    return (yodd && fx_signbit_S(x)) ? -mag : mag;
  }
  if (x < 0.0@ && !yint) return fx_nan_S();
  T_ r = fx_exp_S(y * fx_log_S(abs(x)));
  return (x < 0.0@ && yodd) ? -r : r;
}
)";

std::string instantiate(const std::string& text, bool dbl) {
  std::string out;
  out.reserve(text.size() + 256);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 2, "T_") == 0) {
      out += dbl ? "double" : "float";
      ++i;
    } else if (text.compare(i, 2, "_S") == 0) {
      out += dbl ? "d" : "f";
      ++i;
    } else if (text[i] == '@') {
      if (dbl) out += "lf";
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string make_prelude(const ShaderTarget& target, bool coherent) {
  std::string s = shader_storage(target) + kCommon;
  if (target.subgroup_arithmetic) {
    s += "#extension GL_KHR_shader_subgroup_basic : require\n#extension GL_KHR_shader_subgroup_arithmetic : require\n";
  }
  if (target.cooperative()) {
    // Only a shader that uses them declares their capabilities (and the Vulkan memory model).
    s += "#extension GL_NV_cooperative_matrix : require\n#extension GL_KHR_memory_scope_semantics : require\n"
         "#extension GL_KHR_shader_subgroup_basic : require\n";
  }
  if (target.float16 || target.cooperative())
    s += "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n";
  if (target.preserve_nan32 || (target.float64 && target.preserve_nan64)) {
    s += "#extension GL_EXT_spirv_intrinsics : require\n";
    // SignedZeroInfNanPreserve (execution mode 4461, capability 4466) per float width.
    if (target.preserve_nan32)
      s += "spirv_execution_mode(extensions = [\"SPV_KHR_float_controls\"], capabilities = [4466], 4461, 32);\n";
    if (target.float64 && target.preserve_nan64) {
      s += "spirv_execution_mode(extensions = [\"SPV_KHR_float_controls\"], capabilities = [4466], 4461, 64);\n";
    }
  }
  s += instantiate(kGeneric, false);
  if (target.float64) {
    s += kDoubleBasics;
    s += instantiate(kGeneric, true);
  }
  // Invocations of one loop shader read each other's stores (after barriers): coherent.
  const std::string qualifier = coherent ? "coherent " : "";
  for (size_t at = s.find("COHERENT "); at != std::string::npos; at = s.find("COHERENT ", at + qualifier.size()))
    s.replace(at, 9, qualifier);
  return s;
}

}  // namespace

// Every shader of every recording starts with the prelude (a program's helper shaders are made
// again for each recording), and making it is most of the text a shader is: made once per
// target, kept for the process.
std::string shader_prelude(const ShaderTarget& target, bool coherent) {
  static std::mutex mutex;
  static std::map<std::pair<ShaderTarget, bool>, std::string> made;
  std::lock_guard lock(mutex);
  auto it = made.find({target, coherent});
  if (it == made.end()) it = made.emplace(std::pair{target, coherent}, make_prelude(target, coherent)).first;
  return it->second;
}

std::array<uint32_t, 3> grid(int64_t invocations, int64_t workgroup) {
  int64_t groups = support::ceil_div<int64_t>(invocations, workgroup);
  int64_t x = std::min<int64_t>(groups, 65535);
  int64_t y = x == 0 ? 0 : support::ceil_div(groups, x);
  return {static_cast<uint32_t>(x), static_cast<uint32_t>(y), 1};
}

std::string workgroup_layout(int64_t invocations) {
  return "layout(local_size_x = " + std::to_string(invocations) + ") in;\n";
}

std::string copy_shader(const ShaderTarget& target, bool words) {
  std::string copy =
      words ? "  if (i >= int(fx_word(6) / 4)) return;\n  fx_st_u32(fx_addr(2), i, fx_ld_u32(fx_addr(1), i));\n"
            : "  if (i >= int(fx_word(6))) return;\n  fx_st8(fx_addr(2), i, fx_ld8(fx_addr(1), i));\n";
  return shader_prelude(target) + workgroup_layout(kWorkgroupSize) +
         "void main() {\n  if (!fx_guard()) return;\n  int i = int(gl_WorkGroupID.y * gl_NumWorkGroups.x + "
         "gl_WorkGroupID.x) * " +
         std::to_string(kWorkgroupSize) + " + int(gl_LocalInvocationID.x);\n" + copy + "}\n";
}

std::string cond_guard_shader(const ShaderTarget& target) {
  return shader_prelude(target) + workgroup_layout(kWorkgroupSize) + R"(
void main() {
  if (gl_GlobalInvocationID.x != 0u) return;
  bool g = fx_guard();
  bool p = fx_ld8(fx_addr(1), 0) != 0u;
  fx_st8(fx_addr(2), 0, g && p ? 1u : 0u);
  fx_st8(fx_addr(3), 0, g && !p ? 1u : 0u);
}
)";
}

std::string while_step_shader(const ShaderTarget& target) {
  return shader_prelude(target) + workgroup_layout(kWorkgroupSize) + R"(
void main() {
  if (gl_GlobalInvocationID.x != 0u || !fx_guard()) return;
  bool go = fx_ld8(fx_addr(1), 0) != 0u;
  fx_st8(fx_addr(2), 0, go ? 1u : 0u);
  int code = int(fx_word(8));
  if (go && code != 0) {
    fx_atomic_min_i32(fx_addr(3), 0, code);
    fx_st8(fx_addr(2), 0, 0u);
  }
}
)";
}

}  // namespace fluxion::vulkan
