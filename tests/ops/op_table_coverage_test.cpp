// Op-table coverage: every op of ir/ops.def has a sample program (common/op_samples.h), and
// each sample is run on every backend against the reference evaluator and, for ops marked Grad,
// through reverse and forward mode against central finite differences. A new op without a
// sample fails OpTable.EveryOpHasASample, naming the op; so it cannot be added without these
// checks.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <set>
#include <string>
#include <vector>

#include "common/finite_differences.h"
#include "common/op_samples.h"
#include "common/test_names.h"
#include "eval/interpreter.h"
#include "ir/ir.h"
#include "jit/pipeline.h"
#include "transforms/autodiff/autodiff.h"

namespace ir = fluxion::ir;
using fx::TensorType;

namespace {

// ---- Running a sample.

const Sample* find_sample(const std::vector<Sample>& table, const std::string& op) {
  for (const Sample& s : table) {
    if (s.op == op) return &s;
  }
  return nullptr;
}

bool contains_op(const ir::Region& r, ir::Op op) {
  for (const ir::Node& n : r.nodes) {
    if (n.op == op) return true;
    for (const ir::Region& inner : n.regions) {
      if (contains_op(inner, op)) return true;
    }
  }
  return false;
}

std::vector<Array> run_on(const ir::Program& p, Backend b, const std::vector<Array>& inputs) {
  return fx::driver::compile(p, b).executable->run(inputs);
}

ir::Program as_program(ir::Region r) {
  ir::Program p;
  p.body = std::move(r);
  return p;
}

// Whether the op's derivative is checked: it is marked Grad and its sample has float
// parameters and float results.
bool checks_derivatives(const ir::Program& p, ir::Op op) {
  auto any_float = [](const std::vector<TensorType>& ts) {
    return std::any_of(ts.begin(), ts.end(), [](const TensorType& t) { return fx::is_float(t.dtype); });
  };
  return ir::is_differentiable(op) && any_float(p.body.param_types()) && any_float(p.body.result_types());
}

// The fixed weights of the loss sum(result * w), one array per result (empty for non-floats).
std::vector<std::vector<double>> loss_weights(const ir::Program& p, const std::string& op) {
  std::vector<std::vector<double>> w;
  std::vector<TensorType> results = p.body.result_types();
  for (size_t r = 0; r < results.size(); ++r) {
    if (!fx::is_float(results[r].dtype)) {
      w.emplace_back();
      continue;
    }
    uint32_t seed = seed_of(op) + 7919 * static_cast<uint32_t>(r + 1);
    w.push_back(round_all(results[r].dtype, draw(DType::f64, results[r].numel(), both_signs(0.5, 1.5), seed)));
  }
  return w;
}

// loss = sum over float results r of reduce_sum(r * w_r), appended to the sample's own region.
ir::Region loss_region(const ir::Program& p, const std::vector<std::vector<double>>& weights) {
  ir::Region r = p.body;
  std::vector<ir::ValueId> results = r.results;
  ir::ValueId total = -1;
  for (size_t i = 0; i < results.size(); ++i) {
    TensorType t = r.type(results[i]);
    if (!fx::is_float(t.dtype)) continue;
    ir::Attrs data;
    data.data = weights[i];
    ir::ValueId w = r.add(ir::Op::Constant, {}, data, {t})[0];
    ir::ValueId term = r.add(ir::Op::Mul, {results[i], w})[0];
    if (t.rank() > 0) {
      ir::Attrs all;
      for (int64_t d = 0; d < t.rank(); ++d) all.axes.push_back(d);
      term = r.add(ir::Op::ReduceSum, {term}, all)[0];
    }
    if (t.dtype != DType::f64) term = r.add(ir::Op::Convert, {term}, {}, {TensorType{DType::f64, {}}})[0];
    total = total < 0 ? term : r.add(ir::Op::Add, {total, term})[0];
  }
  r.results = {total};
  return r;
}

// Central finite differences (common/finite_differences.h) of every float result of the sample
// with respect to every element of every float parameter, on the evaluator in f64:
// jacobian[p][j][r][i] = d result r element i / d parameter p element j.
using Jacobian = std::vector<std::vector<std::vector<std::vector<double>>>>;
Jacobian finite_differences(const ir::Program& p, const std::vector<Array>& inputs) {
  return central_differences(inputs, [&](const std::vector<Array>& moved) {
    std::vector<Array> out = fx::eval::run(p, moved);
    std::vector<std::vector<double>> values(out.size());
    for (size_t r = 0; r < out.size(); ++r) {
      if (fx::is_float(out[r].dtype())) values[r] = out[r].to_doubles();
    }
    return values;
  });
}

class OpTable : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(OpTable);

}  // namespace

// ---- The table is complete and right.

TEST(OpTableCoverage, EveryOpHasASample) {
  std::vector<Sample> table = samples();
  for (const ir::OpInfo& info : ir::all_ops()) {
    EXPECT_NE(find_sample(table, info.name), nullptr)
        << "op '" << info.name << "' (ir::Op " << static_cast<int>(info.op)
        << ") has no sample program: add one to samples() in tests/common/op_samples.h (a program "
           "applying the op to parameters, their input domains and the result's tolerance; docs/testing.md)";
  }
  std::set<std::string> seen;
  for (const Sample& s : table) {
    ir::Op op;
    EXPECT_TRUE(ir::op_from_name(s.op, &op)) << "sample for '" << s.op << "', which is not an op of ir/ops.def";
    EXPECT_TRUE(seen.insert(s.op).second) << "two samples for op '" << s.op << "'";
  }
}

TEST(OpTableCoverage, EverySampleParsesAndContainsItsOp) {
  for (const Sample& s : samples()) {
    SCOPED_TRACE("op '" + s.op + "'");
    ir::Op op;
    if (!ir::op_from_name(s.op, &op)) continue;  // reported by EveryOpHasASample
    try {
      ir::Program p = ir::parse(s.text);
      ir::verify(p);
      EXPECT_TRUE(contains_op(p.body, op)) << "the sample program does not apply '" << s.op << "':\n" << s.text;
      EXPECT_EQ(s.inputs.size(), p.body.params.size()) << "one input domain per parameter";
      if (ir::is_differentiable(op)) {
        EXPECT_TRUE(checks_derivatives(p, op)) << "a Grad op's sample needs float parameters and float results";
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "the sample for '" << s.op << "' does not parse: " << e.what() << "\n" << s.text;
    }
  }
}

// ---- Every backend agrees with the evaluator and with finite differences.
//
// One program per sample and backend (compiling dominates the run time, on lavapipe above all):
//   (parameters..., tangents of the float parameters...) ->
//   (results..., [d loss / d each float parameter...], [tangents of the float results...])
// where loss = sum over the float results r of sum(r * w_r) with fixed weights, its gradient is
// autodiff::value_and_grad's region inlined, and the tangents are autodiff::emit_jvp's. The
// bracketed parts are there for ops marked Grad. Simplification merges the repeated primal ops.

TEST_P(OpTable, SamplesMatchTheEvaluatorAndFiniteDifferences) {
  FLUXION_REQUIRE_F64(backend());
  const std::string on = std::string(" on ") + fx::backend_name(backend());
  for (const Sample& s : samples()) {
    SCOPED_TRACE("op '" + s.op + "'" + on);
    ir::Op op;
    if (!ir::op_from_name(s.op, &op)) continue;  // reported by EveryOpHasASample
    try {
      ir::Program p = ir::parse(s.text);
      std::vector<Array> inputs = make_inputs(p, s);
      std::vector<Array> want = fx::eval::run(p, inputs);
      std::vector<TensorType> params = p.body.param_types(), results = p.body.result_types();
      bool derivatives = checks_derivatives(p, op);

      ir::Region checked;
      std::vector<ir::ValueId> args, tangents(params.size(), -1);
      for (const TensorType& t : params) args.push_back(checked.add_param(t));
      std::vector<Array> in = inputs;
      std::vector<std::vector<double>> direction(params.size());
      std::vector<bool> wrt(params.size(), false);
      if (derivatives) {
        for (size_t k = 0; k < params.size(); ++k) {
          if (!fx::is_float(params[k].dtype)) continue;
          wrt[k] = true;
          tangents[k] = checked.add_param(params[k]);
          direction[k] = draw(params[k].dtype, params[k].numel(), uniform(-1, 1),
                              seed_of(s.op) + 31 * static_cast<uint32_t>(k) + 5);
          in.push_back(make(params[k].dtype, direction[k], params[k].shape));
        }
      }

      // Forward mode: the primal and its tangents.
      std::vector<ir::ValueId> outputs, out_tangents;
      bool forward = false;
      if (derivatives) {
        try {
          ir::Region with_tangents = checked;
          out_tangents = fx::autodiff::emit_jvp(with_tangents, p.body, args, tangents, &outputs);
          checked = std::move(with_tangents);
          forward = true;
        } catch (const std::exception& e) {
          ADD_FAILURE() << "op '" << s.op << "' is marked Grad in ops.def but its forward rule fails: " << e.what();
        }
      }
      if (!forward) outputs = ir::inline_region(checked, p.body, args);
      checked.results = outputs;

      // Reverse mode: value_and_grad of the loss.
      std::vector<std::vector<double>> w;
      bool reverse = false;
      if (derivatives) {
        w = loss_weights(p, s.op);
        try {
          ir::Region grad = fx::autodiff::value_and_grad(loss_region(p, w), wrt);
          // The gradients only: the loss's value would cost a reduction kernel (compiling it is
          // most of the run time on lavapipe) and adds nothing to the results compared above.
          std::vector<ir::ValueId> value_and_grads = ir::inline_region(checked, grad, args);
          checked.results.insert(checked.results.end(), value_and_grads.begin() + 1, value_and_grads.end());
          reverse = true;
        } catch (const std::exception& e) {
          ADD_FAILURE() << "op '" << s.op << "' is marked Grad in ops.def but its reverse rule fails: " << e.what();
        }
      }
      if (forward) {
        for (size_t r = 0; r < results.size(); ++r) {
          if (!fx::is_float(results[r].dtype)) continue;
          ir::ValueId t = out_tangents.at(r);
          if (t < 0) {  // a zero tangent: the finite differences say whether that is right
            ir::Attrs zero;
            zero.data = {0};
            t = checked.add(ir::Op::Constant, {}, zero, {results[r]})[0];
          }
          checked.results.push_back(t);
        }
      }

      size_t expected = checked.results.size();
      std::vector<Array> got = run_on(as_program(std::move(checked)), backend(), in);
      if (got.size() != expected) {
        ADD_FAILURE() << "op '" << s.op << "'" << on << ": " << got.size() << " results, expected " << expected;
        continue;
      }
      for (size_t r = 0; r < want.size(); ++r) {
        EXPECT_ARRAY(got[r], want[r].dtype(), want[r].shape(), want[r].to_doubles(), s.tol)
            << "op '" << s.op << "'" << on << ": result " << r << " against the evaluator";
      }
      if (!derivatives) continue;
      Jacobian jac = finite_differences(p, inputs);
      size_t next = want.size();

      if (reverse) {
        // The loss's finite-difference gradient: w . (a column of the Jacobian).
        double f0 = 0;
        for (size_t r = 0; r < want.size(); ++r) {
          std::vector<double> v = want[r].to_doubles();
          for (size_t i = 0; i < w[r].size(); ++i) f0 += w[r][i] * v[i];
        }
        for (size_t k = 0; k < params.size(); ++k) {
          if (!wrt[k]) continue;
          const Array& grad_k = got[next++];
          if (grad_k.shape() != params[k].shape) {
            ADD_FAILURE() << "op '" << s.op << "'" << on << ": the gradient of parameter " << k << " has shape "
                          << fx::shape_str(grad_k.shape());
            continue;
          }
          std::vector<double> gv = grad_k.to_doubles();
          for (size_t j = 0; j < gv.size(); ++j) {
            double fd = 0;
            for (size_t r = 0; r < w.size(); ++r) {
              for (size_t i = 0; i < w[r].size(); ++i) fd += w[r][i] * jac[k][j][r][i];
            }
            EXPECT_NEAR(gv[j], fd, gradient_tolerance(fd, f0))
                << "op '" << s.op << "'" << on << ": reverse mode, d loss / d parameter " << k << " element " << j
                << " against finite differences";
          }
        }
      }

      if (forward) {
        // The directional finite difference along the tangents: J . direction.
        for (size_t r = 0; r < results.size(); ++r) {
          if (!fx::is_float(results[r].dtype)) continue;
          std::vector<double> tv = got[next++].to_doubles(), yv = want[r].to_doubles();
          for (size_t i = 0; i < tv.size(); ++i) {
            double fd = 0;
            for (size_t k = 0; k < params.size(); ++k) {
              for (size_t j = 0; j < direction[k].size(); ++j) fd += jac[k][j][r][i] * direction[k][j];
            }
            EXPECT_NEAR(tv[i], fd, gradient_tolerance(fd, yv[i]))
                << "op '" << s.op << "'" << on << ": forward mode, tangent of result " << r << " element " << i
                << " against finite differences";
          }
        }
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "op '" << s.op << "'" << on << " raised: " << e.what();
    }
  }
}
