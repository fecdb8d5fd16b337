// Dispatch: runs a region node by node, each through its family's rule, then converts between
// Arrays and the interpreter's double buffers at the program boundary.
#include "eval/interpreter.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <string>

#include "eval/buffer.h"
#include "fluxion/error.h"
#include "fluxion/half.h"
#include "runtime/debug_print.h"
#include "runtime/host_memory.h"

namespace fluxion::eval {

using runtime::check_host_memory;
using runtime::fail_allocation;
using runtime::host_bytes;
using runtime::host_memory_limit;
using runtime::program_label;

double round_to(DType t, double x) {
  switch (t) {
    case DType::f32: return static_cast<double>(static_cast<float>(x));
    case DType::f64: return x;
    case DType::i32: {
      if (std::isnan(x)) return 0;
      // Wrap like two's complement 32-bit arithmetic (inputs are integral here).
      double m = std::fmod(std::trunc(x), 4294967296.0);
      if (m < 0) m += 4294967296.0;
      return m >= 2147483648.0 ? m - 4294967296.0 : m;
    }
    case DType::boolean: return x != 0 ? 1.0 : 0.0;
    case DType::f16: return f16_value(f16_bits(x));
    case DType::bf16: return bf16_value(bf16_bits(x));
  }
  return x;
}

Buffer zeros(const TensorType& t) { return Buffer{t, std::vector<double>(static_cast<size_t>(t.numel()), 0.0)}; }

void next_index(std::vector<int64_t>& idx, const Shape& s) {
  for (size_t d = s.size(); d-- > 0;) {
    if (++idx[d] < s[d]) return;
    idx[d] = 0;
  }
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d) f = f * s[d] + idx[d];
  return f;
}

Array to_array(const Buffer& b) {
  switch (b.type.dtype) {
    case DType::f32: return Array(std::vector<float>(b.v.begin(), b.v.end()), b.type.shape);
    case DType::f64: return Array(b.v, b.type.shape);
    case DType::i32: {
      std::vector<int32_t> v(b.v.size());
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(b.v[i]);
      return Array(v, b.type.shape);
    }
    case DType::boolean: {
      std::vector<bool> v(b.v.size());
      for (size_t i = 0; i < v.size(); ++i) v[i] = b.v[i] != 0;
      return Array(v, b.type.shape);
    }
    case DType::f16: {
      std::vector<Half> v(b.v.size());
      for (size_t i = 0; i < v.size(); ++i) v[i] = Half(b.v[i]);
      return Array(v, b.type.shape);
    }
    case DType::bf16: {
      std::vector<BFloat16> v(b.v.size());
      for (size_t i = 0; i < v.size(); ++i) v[i] = BFloat16(b.v[i]);
      return Array(v, b.type.shape);
    }
  }
  return Array();
}

namespace {

// debug_print: the operands printed through the runtime, as compiled programs print them.
void eval_print(const ir::Node& n, const std::vector<Value>& in) {
  runtime::PrintCall call{n.attrs.text, {}};
  std::vector<Array> arrays;
  std::vector<const void*> data;
  for (const Value& v : in) {
    call.types.push_back(v->type);
    arrays.push_back(to_array(*v));
  }
  for (const Array& a : arrays) data.push_back(a.data());
  runtime::emit_print(runtime::format_print(call, data.data()));
}

std::vector<Value> eval_node(const ir::Node& n, const std::vector<Value>& in, const std::vector<TensorType>& out) {
  auto one = [](Buffer b) { return std::vector<Value>{std::make_shared<const Buffer>(std::move(b))}; };
  switch (ir::op_info(n.op).cls) {
    case ir::OpClass::Unary:
    case ir::OpClass::Binary:
    case ir::OpClass::Compare:
    case ir::OpClass::Select:
    case ir::OpClass::Convert: return one(eval_elementwise(n, in, out[0]));
    case ir::OpClass::Reduce:
    case ir::OpClass::ArgReduce: return one(eval_reduce(n, *in[0], out[0]));
    case ir::OpClass::MatMul: return one(eval_matmul(*in[0], *in[1], out[0]));
    case ir::OpClass::Conv:
    case ir::OpClass::ConvGrad: return one(eval_conv(n, *in[0], *in[1], out[0]));
    case ir::OpClass::Pool:
    case ir::OpClass::PoolGrad: return one(eval_pool(n, in, out[0]));
    case ir::OpClass::Constant:
    case ir::OpClass::Iota:
    case ir::OpClass::Reshape:
    case ir::OpClass::Transpose:
    case ir::OpClass::Broadcast:
    case ir::OpClass::Slice:
    case ir::OpClass::Pad:
    case ir::OpClass::Concat:
    case ir::OpClass::Gather:
    case ir::OpClass::Take:
    case ir::OpClass::ScatterAdd: return one(eval_movement(n, in, out[0]));
    case ir::OpClass::Random:
    case ir::OpClass::RngFold: return one(eval_random(n, in, out[0]));
    case ir::OpClass::Collective: return one(eval_collective(n, in, out[0]));
    case ir::OpClass::Debug: eval_print(n, in); return {};
    case ir::OpClass::Scan:
    case ir::OpClass::While:
    case ir::OpClass::Cond:
    case ir::OpClass::CustomVjp:
    case ir::OpClass::CustomJvp: return eval_control(n, in);
  }
  detail::fail(ir::op_name(n.op), "the interpreter has no rule for this op");
}

Value from_array(const Array& a) {
  Buffer b{a.type(), a.to_doubles()};
  return std::make_shared<const Buffer>(std::move(b));
}

// The search of first_non_finite: the stack of (region, node) being evaluated, and where the
// first producer of a non-finite value was found (then evaluation stops by throwing Found).
struct NonFiniteSearch {
  std::vector<std::pair<const ir::Region*, size_t>> frames;
  std::optional<NonFinite> found;
  struct Found {};
};
thread_local NonFiniteSearch* search = nullptr;

// The host memory of the run in progress on this thread (run): its program, FLUXION_MEMORY_LIMIT,
// the bytes of its result Arrays, and the bytes of the values it holds as doubles (each region
// holds every value it computes until it returns).
struct RunMemory {
  const ir::Program* program = nullptr;
  int64_t limit = -1;
  int64_t results = 0;
  int64_t held = 0;
  int64_t peak = 0;  // the most `held` has been
};
thread_local RunMemory* run_memory = nullptr;

int64_t bytes_as_doubles(const std::vector<TensorType>& types) {
  int64_t n = 0;
  for (const TensorType& t : types) n += t.numel() * static_cast<int64_t>(sizeof(double));
  return n;
}

// The first element that is NaN (nan_only) or not finite; -1 when none.
int64_t first_bad(const Buffer& b, bool nan_only) {
  if (!is_float(b.type.dtype)) return -1;
  for (size_t i = 0; i < b.v.size(); ++i)
    if (nan_only ? std::isnan(b.v[i]) : !std::isfinite(b.v[i])) return static_cast<int64_t>(i);
  return -1;
}

// Called after each node while searching: records the node when it is the first producer, of
// a NaN from operands without one (inf - inf from a constant included), or of an infinity from
// finite operands.
void check_node(const ir::Node& n, const std::vector<Value>& in, const std::vector<Value>& res) {
  if (n.op == ir::Op::Constant) return;
  bool in_nan = false, in_non_finite = false;
  for (const Value& v : in) {
    in_nan = in_nan || first_bad(*v, true) >= 0;
    in_non_finite = in_non_finite || first_bad(*v, false) >= 0;
  }
  if (in_nan) return;  // propagated, not produced here
  for (const Value& v : res) {
    int64_t element = first_bad(*v, in_non_finite);
    if (element < 0) continue;
    NonFinite f;
    const auto& frames = search->frames;
    for (size_t j = 0; j < frames.size(); ++j) {
      if (j > 0) {
        const ir::Node& parent = frames[j - 1].first->nodes[frames[j - 1].second];
        f.path.push_back(static_cast<size_t>(frames[j].first - parent.regions.data()));
      }
      f.path.push_back(frames[j].second);
    }
    f.element = element;
    f.value = v->v[static_cast<size_t>(element)];
    search->found = f;
    throw NonFiniteSearch::Found{};
  }
}

}  // namespace

std::vector<Value> eval_region(const ir::Region& r, const std::vector<Value>& args) {
  // The bytes of this region's values, given back when it returns (also when it throws).
  struct Held {
    int64_t bytes = 0;
    ~Held() {
      if (run_memory) run_memory->held -= bytes;
    }
  } held;
  std::vector<Value> env(r.types.size());
  for (size_t i = 0; i < r.params.size(); ++i) env[static_cast<size_t>(r.params[i])] = args[i];
  for (const ir::Node& n : r.nodes) {
    // A replay that looks for a non-finite value does not print again what its run printed.
    if (search && ir::is_effect(n.op)) continue;
    std::vector<Value> in;
    in.reserve(n.operands.size());
    for (ir::ValueId v : n.operands) in.push_back(env[static_cast<size_t>(v)]);
    std::vector<TensorType> out;
    for (ir::ValueId v : n.results) out.push_back(r.type(v));
    int64_t bytes = 0;
    if (RunMemory* m = run_memory) {
      bytes = bytes_as_doubles(out);
      if (m->limit >= 0 && m->results + m->held + bytes > m->limit) {
        check_host_memory(*m->program, m->results, m->held + bytes,
                          std::string("values held as doubles, up to op '") + ir::op_name(n.op) + "'");
      }
    }
    if (search) search->frames.emplace_back(&r, static_cast<size_t>(&n - r.nodes.data()));
    std::vector<Value> res;
    try {
      res = eval_node(n, in, out);
    } catch (const std::bad_alloc&) {
      if (!run_memory) throw;
      std::string what = "the value of op '" + std::string(ir::op_name(n.op)) + "'";
      for (const TensorType& t : out) what += " -> " + t.str();
      fail_allocation(*run_memory->program, what + " (held as doubles)", bytes);
    }
    if (run_memory) {
      run_memory->held += bytes;
      run_memory->peak = std::max(run_memory->peak, run_memory->held);
      held.bytes += bytes;
    }
    if (search) {
      check_node(n, in, res);
      search->frames.pop_back();
    }
    for (size_t i = 0; i < res.size(); ++i) env[static_cast<size_t>(n.results[i])] = std::move(res[i]);
  }
  std::vector<Value> results;
  for (ir::ValueId v : r.results) results.push_back(env[static_cast<size_t>(v)]);
  return results;
}

std::optional<NonFinite> first_non_finite(const ir::Program& p, const std::vector<Array>& inputs) {
  NonFiniteSearch state;
  search = &state;
  struct Reset {
    ~Reset() { search = nullptr; }
  } reset;
  try {
    run(p, inputs);
  } catch (const NonFiniteSearch::Found&) {
  }
  return state.found;
}

std::vector<Array> run(const ir::Program& p, const std::vector<Array>& inputs) {
  std::vector<TensorType> want = p.body.param_types();
  if (inputs.size() != want.size()) {
    detail::fail(
        "call", "the program takes " + std::to_string(want.size()) + " input(s), got " + std::to_string(inputs.size()));
  }
  std::vector<Value> args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].type() != want[i]) {
      detail::fail("call",
                   "input " + std::to_string(i) + " is " + inputs[i].type().str() + ", expected " + want[i].str());
    }
  }
  RunMemory memory;
  memory.program = &p;
  memory.limit = host_memory_limit();
  memory.results = host_bytes(p.body.result_types());
  memory.held = memory.peak = bytes_as_doubles(want);
  check_host_memory(p, memory.results, memory.held, "inputs held as doubles");
  RunMemory* outer = run_memory;
  run_memory = &memory;
  struct Restore {
    RunMemory* outer;
    ~Restore() { run_memory = outer; }
  } restore{outer};
  for (size_t i = 0; i < inputs.size(); ++i) {
    try {
      args.push_back(from_array(inputs[i]));
    } catch (const std::bad_alloc&) {
      fail_allocation(p, "input " + std::to_string(i) + " (" + want[i].str() + ") held as doubles",
                      bytes_as_doubles({want[i]}));
    }
  }
  std::vector<Value> values;
  try {
    values = eval_region(p.body, args);
  } catch (const std::bad_alloc&) {
    // Not an op's value (those are named in eval_region): the bookkeeping around them.
    detail::fail("call", "out of memory: the interpreter ran out of host memory beside the " +
                             std::to_string(memory.peak) + " bytes of values it held as doubles, running " +
                             program_label(p));
  }
  std::vector<Array> out;
  for (size_t k = 0; k < values.size(); ++k) {
    try {
      out.push_back(to_array(*values[k]));
    } catch (const std::bad_alloc&) {
      const TensorType& t = values[k]->type;
      fail_allocation(p, "result " + std::to_string(k) + " (" + t.str() + ")", host_bytes({t}));
    }
  }
  return out;
}

std::vector<Array> evaluate(const ir::Node& n, const std::vector<Array>& operands,
                            const std::vector<TensorType>& result_types) {
  std::vector<Array> out;
  try {
    std::vector<Value> in;
    for (const Array& a : operands) in.push_back(from_array(a));
    for (const Value& v : eval_node(n, in, result_types)) out.push_back(to_array(*v));
  } catch (const std::bad_alloc&) {
    detail::fail(ir::op_name(n.op), "the interpreter ran out of memory (it holds every value as doubles)");
  }
  return out;
}

}  // namespace fluxion::eval
