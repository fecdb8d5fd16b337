// scan, while and cond: run their closed regions on the operand values.
#include <memory>
#include <string>

#include "eval/buffer.h"
#include "fluxion/error.h"

namespace fluxion::eval {
namespace {

Value make_value(Buffer b) { return std::make_shared<const Buffer>(std::move(b)); }

Value scalar_i32(int64_t v) { return make_value(Buffer{TensorType{DType::i32, {}}, {static_cast<double>(v)}}); }

// Slice t of x along its leading dimension.
Value step_slice(const Buffer& x, int64_t t) {
  TensorType type = x.type;
  type.shape.erase(type.shape.begin());
  int64_t n = type.numel();
  auto first = x.v.begin() + static_cast<long>(t * n);
  return make_value(Buffer{type, std::vector<double>(first, first + static_cast<long>(n))});
}

std::vector<Value> scan(const ir::Node& n, const std::vector<Value>& in) {
  const ir::Attrs& a = n.attrs;
  size_t nc = static_cast<size_t>(a.carries), nx = static_cast<size_t>(a.xs);
  const ir::Region& body = n.regions[0];
  std::vector<Value> carries(in.begin(), in.begin() + static_cast<long>(nc));
  std::vector<TensorType> result_types = body.result_types();
  std::vector<Buffer> ys;
  for (size_t j = nc; j < result_types.size(); ++j) {
    TensorType t = result_types[j];
    t.shape.insert(t.shape.begin(), a.length);
    ys.push_back(zeros(t));
  }
  for (int64_t step = 0; step < a.length; ++step) {
    int64_t t = a.reverse ? a.length - 1 - step : step;
    std::vector<Value> args{scalar_i32(t)};
    args.insert(args.end(), carries.begin(), carries.end());
    for (size_t j = 0; j < nx; ++j) args.push_back(step_slice(*in[nc + j], t));
    args.insert(args.end(), in.begin() + static_cast<long>(nc + nx), in.end());
    std::vector<Value> res = eval_region(body, args);
    for (size_t j = 0; j < nc; ++j) carries[j] = res[j];
    for (size_t j = 0; j < ys.size(); ++j) {
      const std::vector<double>& y = res[nc + j]->v;
      std::copy(y.begin(), y.end(), ys[j].v.begin() + static_cast<long>(t * static_cast<int64_t>(y.size())));
    }
  }
  std::vector<Value> out = carries;
  for (Buffer& y : ys) out.push_back(make_value(std::move(y)));
  return out;
}

std::vector<Value> while_loop(const ir::Node& n, const std::vector<Value>& in) {
  size_t nc = static_cast<size_t>(n.attrs.carries);
  std::vector<Value> state = in;  // carries, then the captured values
  for (int64_t iter = 0;; ++iter) {
    if (eval_region(n.regions[0], state)[0]->v[0] == 0) break;
    if (n.attrs.max_iters >= 0 && iter >= n.attrs.max_iters) {
      detail::fail("while", "the loop exceeded max_iters=" + std::to_string(n.attrs.max_iters) +
                                " (its condition was still true)");
    }
    std::vector<Value> next = eval_region(n.regions[1], state);
    for (size_t j = 0; j < nc; ++j) state[j] = next[j];
  }
  return std::vector<Value>(state.begin(), state.begin() + static_cast<long>(nc));
}

}  // namespace

std::vector<Value> eval_control(const ir::Node& n, const std::vector<Value>& in) {
  switch (n.op) {
    case ir::Op::Scan: return scan(n, in);
    case ir::Op::While: return while_loop(n, in);
    case ir::Op::CustomVjp:
    case ir::Op::CustomJvp: return eval_region(n.regions[0], in);  // the rule matters only to autodiff
    case ir::Op::Cond: {
      std::vector<Value> args(in.begin() + 1, in.end());
      return eval_region(n.regions[in[0]->v[0] != 0 ? 0 : 1], args);
    }
    default: break;
  }
  detail::fail(ir::op_name(n.op), "not a control-flow op");
}

}  // namespace fluxion::eval
