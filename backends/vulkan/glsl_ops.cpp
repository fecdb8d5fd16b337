// GLSL for every op: elementwise arithmetic with the interpreter's semantics (NaN propagation,
// i32 wrapping and division by zero, saturating float-to-int conversion), views as index math,
// and the gathering ops (convolution, pooling, argmax, random numbers, integer matmul) as
// loops over their stored operands, in gather form like the CPU backend's.
#include <limits>

#include "backends/vulkan/glsl_kernel.h"
#include "fluxion/error.h"
#include "jit/kernel/elementwise_lowering.h"

namespace fluxion::vulkan {

using ir::Op;

namespace {

std::string call(const std::string& f, DType t, const std::vector<std::string>& args) {
  std::string s = "fx_" + f + (t == DType::f64 ? "d" : "f") + "(";
  for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + args[i];
  return s + ")";
}

std::string clamp_index(const std::string& i, int64_t dim) { return "clamp(" + i + ", 0, " + std::to_string(dim - 1) + ")"; }

}  // namespace

// The elementwise primitives of kernel::lower_elementwise as GLSL expressions.
class GlslKernel::ScalarOps {
 public:
  explicit ScalarOps(GlslKernel& k) : k_(k) {}
  std::string constant(DType t, double v) { return k_.constant(t, v); }
  std::string neg(const std::string& a, DType) { return "(-" + a + ")"; }
  std::string add(const std::string& a, const std::string& b, DType) { return infix(a, "+", b); }
  std::string sub(const std::string& a, const std::string& b, DType) { return infix(a, "-", b); }
  std::string mul(const std::string& a, const std::string& b, DType) { return infix(a, "*", b); }
  std::string fdiv(const std::string& a, const std::string& b, DType t) {
    // lavapipe folds x / 0.0 to 0 even with NaN and infinity preservation requested; x * inf is
    // kept. A zero divisor that is a constant is written as a literal (GlslKernel::at).
    double inf = std::numeric_limits<double>::infinity();
    if (b == k_.constant(t, 0.0)) return infix(a, "*", k_.constant(t, inf));
    if (b == k_.constant(t, -0.0)) return infix(a, "*", k_.constant(t, -inf));
    return infix(a, "/", b);
  }
  std::string idiv(const std::string& a, const std::string& b) { return infix(a, "/", b); }
  std::string compare(kernel::Compare c, const std::string& a, const std::string& b, DType) {
    static const char* const kOps[] = {"==", "!=", "<", "<=", ">", ">="};
    return infix(a, kOps[static_cast<size_t>(c)], b);
  }
  std::string select(const std::string& c, const std::string& a, const std::string& b) {
    return "(" + c + " ? " + a + " : " + b + ")";
  }
  std::string logic_and(const std::string& a, const std::string& b) { return infix(a, "&&", b); }
  std::string logic_or(const std::string& a, const std::string& b) { return infix(a, "||", b); }
  std::string logic_not(const std::string& a) { return "(!" + a + ")"; }
  std::string is_nan(const std::string& a) { return "isnan(" + a + ")"; }
  std::string abs(const std::string& a, DType) { return "abs(" + a + ")"; }
  std::string max(const std::string& a, const std::string& b, DType t) { return extremum("max", a, b, t); }
  std::string min(const std::string& a, const std::string& b, DType t) { return extremum("min", a, b, t); }
  // Fluxion's own math library (glsl_math.cpp): GLSL's built-ins are not accurate enough.
  std::string math(std::string_view f, DType t, const std::vector<std::string>& args) {
    return call(std::string(f), t, args);
  }
  std::string convert(const std::string& a, DType, DType to) { return glsl_type(to) + "(" + a + ")"; }

 private:
  static std::string infix(const std::string& a, const char* op, const std::string& b) {
    return "(" + a + " " + op + " " + b + ")";
  }
  // GLSL's max and min leave the result for a NaN operand undefined; Fluxion's propagate it.
  static std::string extremum(const char* f, const std::string& a, const std::string& b, DType t) {
    std::string plain = std::string(f) + "(" + a + ", " + b + ")";
    if (!is_float(t)) return plain;
    return "(isnan(" + a + ") ? " + a + " : isnan(" + b + ") ? " + b + " : " + plain + ")";
  }
  GlslKernel& k_;
};

std::string GlslKernel::elementwise(const ir::Node& n, const std::vector<std::string>& x, DType in, DType out) {
  ScalarOps ops(*this);
  return kernel::lower_elementwise(ops, n, x, in, out);
}

std::string GlslKernel::reduce_identity(Op op, DType t) {
  double inf = std::numeric_limits<double>::infinity();
  bool i = t == DType::i32;
  switch (op) {
    case Op::ReduceMax: return constant(t, i ? std::numeric_limits<int32_t>::min() : -inf);
    case Op::ReduceMin: return constant(t, i ? std::numeric_limits<int32_t>::max() : inf);
    default: return constant(t, 0);
  }
}

std::string GlslKernel::combine(Op op, DType t, const std::string& acc, const std::string& x) {
  bool fp = is_float(t);
  switch (op) {
    case Op::ReduceMax:
    case Op::ReduceMin: {
      const char* f = op == Op::ReduceMax ? "max" : "min";
      if (!fp) return std::string(f) + "(" + acc + ", " + x + ")";
      return "(isnan(" + acc + ") ? " + acc + " : isnan(" + x + ") ? " + x + " : " + f + "(" + acc + ", " + x + "))";
    }
    default: return "(" + acc + " + " + x + ")";
  }
}

std::string GlslKernel::view(const ir::Node& n, ir::ValueId v, const Index& idx) {
  const Shape& out = r_.type(v).shape;
  const Shape& in = r_.type(n.operands[0]).shape;
  Index src;
  switch (n.op) {
    case Op::Reshape: {
      std::string f = fresh("f");
      line("int " + f + " = " + flat(idx, out) + ";");
      return at(n.operands[0], unravel(f, in));
    }
    case Op::Transpose:
      src.assign(in.size(), "");
      for (size_t i = 0; i < n.attrs.perm.size(); ++i) src[static_cast<size_t>(n.attrs.perm[i])] = idx[i];
      return at(n.operands[0], src);
    case Op::Broadcast: {
      size_t off = out.size() - in.size();
      for (size_t d = 0; d < in.size(); ++d) src.push_back(in[d] == 1 ? "0" : idx[d + off]);
      return at(n.operands[0], src);
    }
    case Op::Slice:
      for (size_t d = 0; d < in.size(); ++d) {
        src.push_back("(" + std::to_string(n.attrs.starts[d]) + " + " + idx[d] + " * " + std::to_string(n.attrs.strides[d]) + ")");
      }
      return at(n.operands[0], src);
    case Op::Pad: {
      DType t = r_.type(v).dtype;
      if (numel(in) == 0) return constant(t, 0);
      std::string valid = fresh("ok");
      line("bool " + valid + " = true;");
      for (size_t d = 0; d < in.size(); ++d) {
        std::string q = fresh("p");
        std::string s = std::to_string(n.attrs.strides[d]);
        line("int " + q + " = " + idx[d] + " - " + std::to_string(n.attrs.padding[2 * d]) + ";");
        line(valid + " = " + valid + " && " + q + " >= 0 && " + q + " % " + s + " == 0 && " + q + " / " + s + " < " + std::to_string(in[d]) + ";");
        src.push_back(clamp_index(q + " / " + s, in[d]));
      }
      std::string result = fresh("t");
      line(glsl_type(t) + " " + result + " = " + constant(t, 0) + ";");
      line("if (" + valid + ") {");
      block([&] { line(result + " = " + at(n.operands[0], src) + ";"); });
      line("}");
      return result;
    }
    case Op::Concat: {
      size_t ax = static_cast<size_t>(n.attrs.axes[0]);
      DType t = r_.type(v).dtype;
      std::string result = fresh("t");
      line(glsl_type(t) + " " + result + ";");
      int64_t offset = 0;
      bool first = true;
      for (ir::ValueId part : n.operands) {
        int64_t size = r_.type(part).shape[ax];
        if (size == 0) continue;
        line(std::string(first ? "" : "else ") + "if (" + idx[ax] + " < " + std::to_string(offset + size) + ") {");
        block([&] {
          Index pi = idx;
          pi[ax] = "(" + idx[ax] + " - " + std::to_string(offset) + ")";
          line(result + " = " + at(part, pi) + ";");
        });
        line("}");
        first = false;
        offset += size;
      }
      return result;
    }
    case Op::Gather: {
      size_t ax = static_cast<size_t>(n.attrs.axes[0]);
      src = idx;
      src[ax] = clamp_index(at(n.operands[1], idx), in[ax]);
      return at(n.operands[0], src);
    }
    case Op::Take: {
      size_t ax = static_cast<size_t>(n.attrs.axes[0]);
      size_t ir_rank = r_.type(n.operands[1]).shape.size();
      Index ii(idx.begin() + static_cast<long>(ax), idx.begin() + static_cast<long>(ax + ir_rank));
      std::string i = at(n.operands[1], ii);
      src.assign(idx.begin(), idx.begin() + static_cast<long>(ax));
      src.push_back(clamp_index(i, in[ax]));
      src.insert(src.end(), idx.begin() + static_cast<long>(ax + ir_rank), idx.end());
      return at(n.operands[0], src);
    }
    default: break;
  }
  detail::fail(ir::op_name(n.op), "internal error: not a view op in the Vulkan code generator");
}

std::string GlslKernel::compute(const ir::Node& n, const Index& idx) {
  ir::ValueId res = n.results[0];
  DType out = r_.type(res).dtype;
  switch (ir::op_info(n.op).cls) {
    case ir::OpClass::Unary:
    case ir::OpClass::Binary:
    case ir::OpClass::Compare:
    case ir::OpClass::Select:
    case ir::OpClass::Convert: {
      std::vector<std::string> x;
      for (ir::ValueId o : n.operands) x.push_back(at(o, idx));
      return elementwise(n, x, r_.type(n.operands.back()).dtype, out);
    }
    case ir::OpClass::Constant: return constant(out, n.attrs.data.size() == 1 ? n.attrs.data[0] : 0);
    case ir::OpClass::Iota: return glsl_type(out) + "(" + idx[static_cast<size_t>(n.attrs.axes[0])] + ")";
    default: break;
  }
  if (ir::is_view(n.op)) return view(n, res, idx);
  return gathering(n, idx);
}

// Position (h, w) of the element max pooling selects in output o's window: the first maximum,
// or the first NaN, in row-major window order; padding excluded.
std::pair<std::string, std::string> GlslKernel::pool_select(ir::ValueId x, const Index& o, const ir::Attrs& a) {
  const Shape& xs = r_.type(x).shape;
  DType t = r_.type(x).dtype;
  std::string best = fresh("best"), bh = fresh("bh"), bw = fresh("bw"), found = fresh("found");
  line(glsl_type(t) + " " + best + " = " + constant(t, 0) + ";");
  line("int " + bh + " = 0, " + bw + " = 0;");
  line("bool " + found + " = false;");
  loop(a.window[0], [&](const std::string& kh) {
    loop(a.window[1], [&](const std::string& kw) {
      std::string h = fresh("h"), w = fresh("w");
      line("int " + h + " = " + o[2] + " * " + std::to_string(a.strides[0]) + " - " + std::to_string(a.padding[0]) + " + " + kh + ";");
      line("int " + w + " = " + o[3] + " * " + std::to_string(a.strides[1]) + " - " + std::to_string(a.padding[2]) + " + " + kw + ";");
      line("if (" + h + " >= 0 && " + h + " < " + std::to_string(xs[2]) + " && " + w + " >= 0 && " + w + " < " + std::to_string(xs[3]) + ") {");
      block([&] {
        std::string v = at(x, {o[0], o[1], h, w});
        line("if (!" + found + " || (!isnan(" + best + ") && (isnan(" + v + ") || " + v + " > " + best + "))) { " + best + " = " + v + "; " +
             bh + " = " + h + "; " + bw + " = " + w + "; " + found + " = true; }");
      });
      line("}");
    });
  });
  return {bh, bw};
}

std::string GlslKernel::conv(const ir::Node& n, const Index& o) {
  const ir::Attrs& a = n.attrs;
  DType t = r_.type(n.results[0]).dtype;
  ir::ValueId op0 = n.operands[0], op1 = n.operands[1];
  std::string acc = fresh("acc");
  line(glsl_type(t) + " " + acc + " = " + constant(t, 0) + ";");
  auto S = [](int64_t v) { return std::to_string(v); };
  // Input coordinate read by output coordinate `out` through kernel offset k.
  auto fwd = [&](const std::string& out, int d, const std::string& k) {
    return "(" + out + " * " + S(a.strides[static_cast<size_t>(d)]) + " - " + S(a.padding[static_cast<size_t>(2 * d)]) + " + " + k + " * " +
           S(a.dilation[static_cast<size_t>(d)]) + ")";
  };
  if (n.op == Op::Conv2d) {  // x, w -> y[n, o, oh, ow]
    const Shape &xs = r_.type(op0).shape, &ws = r_.type(op1).shape;
    int64_t per_group = ws[0] / a.groups;
    std::string c0 = fresh("c");
    line("int " + c0 + " = (" + o[1] + " / " + S(per_group) + ") * " + S(ws[1]) + ";");
    loop(ws[1], [&](const std::string& c) {
      loop(ws[2], [&](const std::string& kh) {
        loop(ws[3], [&](const std::string& kw) {
          std::string h = fresh("h"), w = fresh("w");
          line("int " + h + " = " + fwd(o[2], 0, kh) + ", " + w + " = " + fwd(o[3], 1, kw) + ";");
          line("if (" + h + " >= 0 && " + h + " < " + S(xs[2]) + " && " + w + " >= 0 && " + w + " < " + S(xs[3]) + ") {");
          block([&] {
            line(acc + " += " + at(op0, {o[0], "(" + c0 + " + " + c + ")", h, w}) + " * " + at(op1, {o[1], c, kh, kw}) + ";");
          });
          line("}");
        });
      });
    });
    return acc;
  }
  // Output coordinate that reads input coordinate `in` through kernel offset k, if any.
  auto back = [&](const std::string& in, int d, const std::string& k, int64_t out_dim, const std::string& q, const std::string& ok) {
    std::string t0 = fresh("d");
    std::string s = S(a.strides[static_cast<size_t>(d)]);
    line("int " + t0 + " = " + in + " + " + S(a.padding[static_cast<size_t>(2 * d)]) + " - " + k + " * " + S(a.dilation[static_cast<size_t>(d)]) + ";");
    line("int " + q + " = " + t0 + " / " + s + ";");
    line("bool " + ok + " = " + t0 + " >= 0 && " + t0 + " % " + s + " == 0 && " + q + " < " + S(out_dim) + ";");
  };
  if (n.op == Op::Conv2dInputGrad) {  // g, w -> dx[n, c, h, w]
    const Shape &gs = r_.type(op0).shape, &ws = r_.type(op1).shape;
    int64_t per_group = ws[0] / a.groups;
    std::string group = fresh("g"), cl = fresh("c");
    line("int " + group + " = " + o[1] + " / " + S(ws[1]) + ", " + cl + " = " + o[1] + " % " + S(ws[1]) + ";");
    loop(per_group, [&](const std::string& oi) {
      loop(ws[2], [&](const std::string& kh) {
        loop(ws[3], [&](const std::string& kw) {
          std::string oh = fresh("q"), ohok = fresh("ok"), ow = fresh("q"), owok = fresh("ok");
          back(o[2], 0, kh, gs[2], oh, ohok);
          back(o[3], 1, kw, gs[3], ow, owok);
          line("if (" + ohok + " && " + owok + ") {");
          block([&] {
            std::string oc = "(" + group + " * " + S(per_group) + " + " + oi + ")";
            line(acc + " += " + at(op0, {o[0], oc, oh, ow}) + " * " + at(op1, {oc, cl, kh, kw}) + ";");
          });
          line("}");
        });
      });
    });
    return acc;
  }
  // Conv2dWeightGrad: x, g -> dw[o, c, kh, kw]
  const Shape &xs = r_.type(op0).shape, &gs = r_.type(op1).shape;
  const Shape& ws = r_.type(n.results[0]).shape;
  int64_t per_group = ws[0] / a.groups;
  std::string c0 = fresh("c");
  line("int " + c0 + " = (" + o[0] + " / " + S(per_group) + ") * " + S(ws[1]) + ";");
  loop(gs[0], [&](const std::string& bn) {
    loop(gs[2], [&](const std::string& oh) {
      loop(gs[3], [&](const std::string& ow) {
        std::string h = fresh("h"), w = fresh("w");
        line("int " + h + " = " + fwd(oh, 0, o[2]) + ", " + w + " = " + fwd(ow, 1, o[3]) + ";");
        line("if (" + h + " >= 0 && " + h + " < " + S(xs[2]) + " && " + w + " >= 0 && " + w + " < " + S(xs[3]) + ") {");
        block([&] {
          line(acc + " += " + at(op0, {bn, "(" + c0 + " + " + o[1] + ")", h, w}) + " * " + at(op1, {bn, o[0], oh, ow}) + ";");
        });
        line("}");
      });
    });
  });
  return acc;
}

std::string GlslKernel::pool(const ir::Node& n, const Index& o) {
  const ir::Attrs& a = n.attrs;
  DType t = r_.type(n.results[0]).dtype;
  std::string area = constant(t, static_cast<double>(a.window[0] * a.window[1]));
  auto S = [](int64_t v) { return std::to_string(v); };
  if (n.op == Op::MaxPool2d || n.op == Op::MaxPool2dSelect) {
    auto [h, w] = pool_select(n.operands[0], o, a);
    return at(n.operands[n.op == Op::MaxPool2d ? 0 : 1], {o[0], o[1], h, w});
  }
  std::string acc = fresh("acc");
  line(glsl_type(t) + " " + acc + " = " + constant(t, 0) + ";");
  if (n.op == Op::AvgPool2d) {
    const Shape& xs = r_.type(n.operands[0]).shape;
    loop(a.window[0], [&](const std::string& kh) {
      loop(a.window[1], [&](const std::string& kw) {
        std::string h = fresh("h"), w = fresh("w");
        line("int " + h + " = " + o[2] + " * " + S(a.strides[0]) + " - " + S(a.padding[0]) + " + " + kh + ";");
        line("int " + w + " = " + o[3] + " * " + S(a.strides[1]) + " - " + S(a.padding[2]) + " + " + kw + ";");
        line("if (" + h + " >= 0 && " + h + " < " + S(xs[2]) + " && " + w + " >= 0 && " + w + " < " + S(xs[3]) + ") {");
        block([&] { line(acc + " += " + at(n.operands[0], {o[0], o[1], h, w}) + ";"); });
        line("}");
      });
    });
    return "(" + acc + " / " + area + ")";
  }
  // The gradients, in gather form: input element (p0, p1, h, w) sums over the windows that hold it.
  ir::ValueId g = n.operands[n.op == Op::MaxPool2dGrad ? 1 : 0];
  const Shape& gs = r_.type(g).shape;
  loop(a.window[0], [&](const std::string& kh) {
    loop(a.window[1], [&](const std::string& kw) {
      std::string th = fresh("d"), tw = fresh("d"), oh = fresh("q"), ow = fresh("q");
      line("int " + th + " = " + o[2] + " + " + S(a.padding[0]) + " - " + kh + ", " + tw + " = " + o[3] + " + " + S(a.padding[2]) + " - " + kw + ";");
      line("int " + oh + " = " + th + " / " + S(a.strides[0]) + ", " + ow + " = " + tw + " / " + S(a.strides[1]) + ";");
      line("if (" + th + " >= 0 && " + th + " % " + S(a.strides[0]) + " == 0 && " + oh + " < " + S(gs[2]) + " && " + tw + " >= 0 && " + tw +
           " % " + S(a.strides[1]) + " == 0 && " + ow + " < " + S(gs[3]) + ") {");
      block([&] {
        Index out{o[0], o[1], oh, ow};
        std::string gv = at(g, out);
        if (n.op == Op::AvgPool2dGrad) {
          line(acc + " += " + gv + " / " + area + ";");
        } else {
          auto [sh, sw] = pool_select(n.operands[0], out, a);
          line("if (" + sh + " == " + o[2] + " && " + sw + " == " + o[3] + ") " + acc + " += " + gv + ";");
        }
      });
      line("}");
    });
  });
  return acc;
}

std::string GlslKernel::argreduce(const ir::Node& n, const Index& o) {
  ir::ValueId x = n.operands[0];
  DType xt = r_.type(x).dtype;
  size_t ax = static_cast<size_t>(n.attrs.axes[0]);
  auto index_at = [&](const std::string& k) {
    Index i(o.begin(), o.begin() + static_cast<long>(ax));
    i.push_back(k);
    i.insert(i.end(), o.begin() + static_cast<long>(ax), o.end());
    return i;
  };
  std::string best = fresh("best"), where = fresh("at");
  line(glsl_type(xt) + " " + best + " = " + at(x, index_at("0")) + ";");
  line("int " + where + " = 0;");
  std::string k = fresh("k");
  auto saved = memo_;
  line("for (int " + k + " = 1; " + k + " < " + std::to_string(r_.type(x).shape[ax]) + "; ++" + k + ") {");
  block([&] {
    std::string v = at(x, index_at(k));
    const char* cmp = n.op == Op::Argmax ? " > " : " < ";
    std::string better = is_float(xt) ? "!isnan(" + best + ") && (isnan(" + v + ") || " + v + cmp + best + ")" : v + cmp + best;
    line("if (" + better + ") { " + best + " = " + v + "; " + where + " = " + k + "; }");
  });
  line("}");
  memo_ = saved;
  return where;
}

std::string GlslKernel::random(const ir::Node& n, const Index& o) {
  ir::ValueId key = n.operands[0];
  DType t = r_.type(n.results[0]).dtype;
  std::string k = "uvec2(uint(" + at(key, {"0"}) + "), uint(" + at(key, {"1"}) + "))";
  if (n.op == Op::RngFold) {
    std::string w = fresh("w");
    line("uvec4 " + w + " = fx_philox4(uvec4(uint(" + at(n.operands[1], {}) + "), 0u, 1u, 0u), " + k + ");");
    return "int(" + w + "[" + o[0] + "])";
  }
  std::string w = fresh("w");
  line("uvec2 " + w + " = fx_philox4(uvec4(uint(" + flat(o, r_.type(n.results[0]).shape) + "), 0u, 0u, 0u), " + k + ").xy;");
  if (n.op == Op::RngNormal) {
    // Box-Muller in the widest type the device has.
    DType c = target_.float64 ? DType::f64 : DType::f32;
    std::string T = glsl_type(c);
    std::string u1 = "((" + T + "(" + w + ".x) + " + constant(c, 1) + ") * " + constant(c, 0x1p-32) + ")";
    std::string u2 = "(" + T + "(" + w + ".y) * " + constant(c, 0x1p-32) + ")";
    std::string z = call("sqrt", c, {"-2.0 * " + call("log", c, {u1})}) + " * " + call("cos", c, {constant(c, 6.283185307179586) + " * " + u2});
    return glsl_type(t) + "(" + z + ")";
  }
  if (t == DType::f32) return "(float(" + w + ".x >> 8) * " + constant(DType::f32, 0x1p-24) + ")";
  return "((double(" + w + ".x) * 2097152.0lf + double(" + w + ".y >> 11)) * " + constant(DType::f64, 0x1p-53) + ")";
}

std::string GlslKernel::int_matmul(const ir::Node& n, const Index& o) {
  ir::ValueId a = n.operands[0], b = n.operands[1];
  DType t = r_.type(n.results[0]).dtype;
  size_t rank = o.size();
  std::string acc = fresh("acc");
  line(glsl_type(t) + " " + acc + " = " + constant(t, 0) + ";");
  loop(r_.type(a).shape.back(), [&](const std::string& q) {
    Index ai(o.begin(), o.end() - 1), bi(o.begin(), o.end() - 2);
    ai.back() = o[rank - 2];
    ai.push_back(q);
    bi.push_back(q);
    bi.push_back(o[rank - 1]);
    line(acc + " += " + at(a, ai) + " * " + at(b, bi) + ";");
  });
  return acc;
}

std::string GlslKernel::gathering(const ir::Node& n, const Index& o) {
  switch (ir::op_info(n.op).cls) {
    case ir::OpClass::Conv:
    case ir::OpClass::ConvGrad: return conv(n, o);
    case ir::OpClass::Pool:
    case ir::OpClass::PoolGrad: return pool(n, o);
    case ir::OpClass::ArgReduce: return argreduce(n, o);
    case ir::OpClass::Random:
    case ir::OpClass::RngFold: return random(n, o);
    case ir::OpClass::MatMul: return int_matmul(n, o);
    default: break;
  }
  detail::fail(ir::op_name(n.op), "internal error: no Vulkan code generation rule for this op");
}

}  // namespace fluxion::vulkan
