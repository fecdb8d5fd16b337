// GLSL for every op: elementwise arithmetic with the interpreter's semantics (NaN propagation,
// i32 wrapping and division by zero, saturating float-to-int conversion), views as index math,
// and the gathering ops (convolution, pooling, argmax, random numbers, integer matmul) as
// loops over their stored operands, in gather form like the CPU backend's.
#include <limits>

#include "backends/vulkan/glsl_kernel.h"
#include "fluxion/error.h"

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

std::string GlslKernel::elementwise(const ir::Node& n, const std::vector<std::string>& x, DType in, DType out) {
  bool fp = is_float(in);
  std::string T = glsl_type(in);
  std::string zero = constant(in, 0), one = constant(in, 1);
  auto nan_max = [&](const std::string& a, const std::string& b, const char* f) {
    return "(isnan(" + a + ") ? " + a + " : isnan(" + b + ") ? " + b + " : " + f + "(" + a + ", " + b + "))";
  };
  switch (n.op) {
    case Op::Neg: return "(-" + x[0] + ")";
    case Op::Abs: return "abs(" + x[0] + ")";
    case Op::Sign:
      if (fp) return "(" + x[0] + " > " + zero + " ? " + one + " : " + x[0] + " < " + zero + " ? " + constant(in, -1) + " : " + x[0] + ")";
      return "sign(" + x[0] + ")";
    case Op::Square: return "(" + x[0] + " * " + x[0] + ")";
    case Op::Relu: return fp ? nan_max(x[0], zero, "max") : "max(" + x[0] + ", 0)";
    case Op::Exp: return call("exp", in, {x[0]});
    case Op::Expm1: return call("expm1", in, {x[0]});
    case Op::Log: return call("log", in, {x[0]});
    case Op::Log1p: return call("log1p", in, {x[0]});
    case Op::Sqrt: return call("sqrt", in, {x[0]});
    case Op::Rsqrt: return "(" + one + " / " + call("sqrt", in, {x[0]}) + ")";
    case Op::Sin: return call("sin", in, {x[0]});
    case Op::Cos: return call("cos", in, {x[0]});
    case Op::Tanh: return call("tanh", in, {x[0]});
    case Op::Sigmoid: return call("sigmoid", in, {x[0]});
    case Op::Softplus: return call("softplus", in, {x[0]});
    case Op::Erf: return call("erf", in, {x[0]});
    case Op::Floor: return "floor(" + x[0] + ")";
    case Op::Not: return "(!" + x[0] + ")";
    case Op::StopGradient: return x[0];
    case Op::Add: return "(" + x[0] + " + " + x[1] + ")";
    case Op::Sub: return "(" + x[0] + " - " + x[1] + ")";
    case Op::Mul: return "(" + x[0] + " * " + x[1] + ")";
    case Op::Div:
      if (fp && is_zero_constant(n.operands[1])) {
        // lavapipe folds x / 0.0 to 0 even with NaN/Inf preservation requested; x * inf is kept.
        return "(" + x[0] + " * " + constant(in, std::numeric_limits<double>::infinity()) + ")";
      }
      if (fp) return "(" + x[0] + " / " + x[1] + ")";
      // x / 0 = 0, and INT_MIN / -1 wraps, as the interpreter defines them.
      return "(" + x[1] + " == 0 ? 0 : " + x[1] + " == -1 ? -" + x[0] + " : " + x[0] + " / " + x[1] + ")";
    case Op::Max: return fp ? nan_max(x[0], x[1], "max") : "max(" + x[0] + ", " + x[1] + ")";
    case Op::Min: return fp ? nan_max(x[0], x[1], "min") : "min(" + x[0] + ", " + x[1] + ")";
    case Op::Pow: return call("pow", in, {x[0], x[1]});
    case Op::Atan2: return call("atan2", in, {x[0], x[1]});
    case Op::And: return "(" + x[0] + " && " + x[1] + ")";
    case Op::Or: return "(" + x[0] + " || " + x[1] + ")";
    case Op::Eq: return "(" + x[0] + " == " + x[1] + ")";
    case Op::Ne: return "(" + x[0] + " != " + x[1] + ")";
    case Op::Lt: return "(" + x[0] + " < " + x[1] + ")";
    case Op::Le: return "(" + x[0] + " <= " + x[1] + ")";
    case Op::Gt: return "(" + x[0] + " > " + x[1] + ")";
    case Op::Ge: return "(" + x[0] + " >= " + x[1] + ")";
    case Op::Select: return "(" + x[0] + " ? " + x[1] + " : " + x[2] + ")";
    case Op::Convert: {
      std::string to = glsl_type(out);
      if (in == out) return x[0];
      if (out == DType::boolean) return "(" + x[0] + " != " + zero + ")";
      if (in == DType::boolean) return "(" + x[0] + " ? " + constant(out, 1) + " : " + constant(out, 0) + ")";
      if (fp && out == DType::i32) {
        return "(isnan(" + x[0] + ") ? 0 : " + x[0] + " >= " + constant(in, 2147483648.0) + " ? 2147483647 : " + x[0] +
               " <= " + constant(in, -2147483648.0) + " ? (-2147483647 - 1) : int(" + x[0] + "))";
      }
      return to + "(" + x[0] + ")";
    }
    default: break;
  }
  detail::fail(ir::op_name(n.op), "internal error: not an elementwise op in the Vulkan code generator");
}

bool GlslKernel::is_zero_constant(ir::ValueId v) const {
  int p = producer_[static_cast<size_t>(v)];
  if (p < 0) return false;
  const ir::Node& n = r_.nodes[static_cast<size_t>(p)];
  return n.op == Op::Constant && n.attrs.data.size() == 1 && n.attrs.data[0] == 0;
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
  if (kernel::is_view_op(n.op)) return view(n, res, idx);
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
