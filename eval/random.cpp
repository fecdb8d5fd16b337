// rng_uniform, rng_normal and rng_fold on Philox-4x32-10 (docs/ir.md gives the bit recipes;
// every backend must follow them exactly so that draws agree across backends).
#include <cmath>
#include <numbers>

#include "eval/buffer.h"
#include "runtime/philox.h"

namespace fluxion::eval {
namespace {

runtime::philox::Key key_of(const Buffer& key) {
  return {static_cast<uint32_t>(static_cast<int32_t>(key.v[0])), static_cast<uint32_t>(static_cast<int32_t>(key.v[1]))};
}

}  // namespace

Buffer eval_random(const ir::Node& n, const std::vector<Value>& in, const TensorType& out) {
  runtime::philox::Key key = key_of(*in[0]);
  Buffer r = zeros(out);
  if (n.op == ir::Op::RngFold) {
    uint32_t data = static_cast<uint32_t>(static_cast<int32_t>(in[1]->v[0]));
    runtime::philox::Counter w = runtime::philox::philox4x32_10({data, 0, 1, 0}, key);
    r.v = {static_cast<double>(static_cast<int32_t>(w[0])), static_cast<double>(static_cast<int32_t>(w[1]))};
    return r;
  }
  for (size_t i = 0; i < r.v.size(); ++i) {
    uint64_t idx = i;
    runtime::philox::Counter w =
        runtime::philox::philox4x32_10({static_cast<uint32_t>(idx), static_cast<uint32_t>(idx >> 32), 0, 0}, key);
    double x;
    if (n.op == ir::Op::RngNormal) {
      double u1 = (static_cast<double>(w[0]) + 1.0) * 0x1p-32;  // (0, 1]: log is finite
      double u2 = static_cast<double>(w[1]) * 0x1p-32;
      x = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
    } else if (out.dtype != DType::f64) {
      int bits = runtime::philox::uniform_bits(out.dtype);
      x = std::ldexp(static_cast<double>(w[0] >> (32 - bits)), -bits);
    } else {
      x = static_cast<double>(((static_cast<uint64_t>(w[0]) << 32) | w[1]) >> 11) * 0x1p-53;
    }
    r.v[i] = round_to(out.dtype, x);
  }
  return r;
}

}  // namespace fluxion::eval
