// Every op's batching rule. Each op-table sample (common/op_samples.h), batched by vmap over 3
// examples with each parameter alone carrying the batch and then all of them, must give each
// example what the sample gives it alone, in the evaluator; and every backend must agree with the
// evaluator on the batched programs. An op whose rule is missing fails here, named.
#include <string>
#include <vector>

#include "common/op_samples.h"
#include "common/test_names.h"
#include "eval/interpreter.h"
#include "ir/ir.h"
#include "jit/pipeline.h"
#include "transforms/batching/vmap.h"

namespace ir = fluxion::ir;
using fx::TensorType;

namespace {

constexpr int64_t kExamples = 3;

// Which parameters carry the batch: each alone, then all of them.
std::vector<std::vector<bool>> patterns(size_t params) {
  std::vector<std::vector<bool>> out;
  for (size_t i = 0; i < params; ++i) {
    std::vector<bool> one(params, false);
    one[i] = true;
    out.push_back(one);
  }
  if (params > 1) out.emplace_back(params, true);
  return out;
}

Array stack(const std::vector<Array>& examples) {
  std::vector<double> values;
  for (const Array& a : examples) {
    std::vector<double> v = a.to_doubles();
    values.insert(values.end(), v.begin(), v.end());
  }
  Shape s = examples[0].shape();
  s.insert(s.begin(), static_cast<int64_t>(examples.size()));
  return make(examples[0].dtype(), values, s);
}

std::vector<double> example_values(const Array& batched, int64_t e) {
  std::vector<double> v = batched.to_doubles();
  size_t n = v.size() / static_cast<size_t>(kExamples);
  return {v.begin() + static_cast<long>(n * static_cast<size_t>(e)), v.begin() + static_cast<long>(n * (e + 1))};
}

// The batched program's inputs: the examples' values stacked where the pattern batches, example
// 0's elsewhere.
std::vector<Array> batched_inputs(const std::vector<std::vector<Array>>& examples, const std::vector<bool>& pattern) {
  std::vector<Array> in;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (!pattern[i]) {
      in.push_back(examples[0][i]);
      continue;
    }
    std::vector<Array> column;
    for (const auto& example : examples) column.push_back(example[i]);
    in.push_back(stack(column));
  }
  return in;
}

std::vector<std::vector<Array>> draw_examples(const ir::Program& p, const Sample& s) {
  std::vector<std::vector<Array>> examples;
  for (int64_t e = 0; e < kExamples; ++e) examples.push_back(make_inputs(p, s, static_cast<uint32_t>(e)));
  return examples;
}

ir::Program batched_program(const ir::Program& p, const std::vector<bool>& pattern) {
  ir::Program b;
  b.body = fx::batching::vmap(p.body, pattern, kExamples, std::vector<bool>(p.body.results.size(), true));
  return b;
}

class OpBatching : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(OpBatching);

}  // namespace

TEST(OpBatchingRules, EachExampleGetsWhatItGetsAlone) {
  for (const Sample& s : samples()) {
    SCOPED_TRACE("op '" + s.op + "'");
    ir::Program p = ir::parse(s.text);
    std::vector<std::vector<Array>> examples = draw_examples(p, s);
    for (const std::vector<bool>& pattern : patterns(p.body.params.size())) {
      std::string which;
      for (bool b : pattern) which += b ? "B" : "-";
      SCOPED_TRACE("batched parameters " + which);
      try {
        ir::Program batched = batched_program(p, pattern);
        ir::verify(batched);
        std::vector<Array> got = fx::eval::run(batched, batched_inputs(examples, pattern));
        for (int64_t e = 0; e < kExamples; ++e) {
          std::vector<Array> alone = examples[0];
          for (size_t i = 0; i < pattern.size(); ++i) {
            if (pattern[i]) alone[i] = examples[static_cast<size_t>(e)][i];
          }
          std::vector<Array> want = fx::eval::run(p, alone);
          for (size_t r = 0; r < want.size(); ++r) {
            Array example = make(got[r].dtype(), example_values(got[r], e), want[r].shape());
            EXPECT_ARRAY(example, want[r].dtype(), want[r].shape(), want[r].to_doubles(), s.tol)
                << "result " << r << " of example " << e;
          }
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << "batching op '" << s.op << "' failed: " << e.what();
      }
    }
  }
}

// One program per sample and backend: every pattern's batched program side by side.
TEST_P(OpBatching, BackendsMatchTheEvaluatorOnBatchedSamples) {
  FLUXION_REQUIRE_F64(backend());
  for (const Sample& s : samples()) {
    SCOPED_TRACE("op '" + s.op + "' on " + std::string(fx::backend_name(backend())));
    ir::Program p = ir::parse(s.text);
    if (p.body.params.empty()) continue;
    std::vector<std::vector<Array>> examples = draw_examples(p, s);
    ir::Program all;
    std::vector<Array> inputs;
    for (const std::vector<bool>& pattern : patterns(p.body.params.size())) {
      ir::Program batched = batched_program(p, pattern);
      std::vector<ir::ValueId> args;
      for (ir::ValueId v : batched.body.params) args.push_back(all.body.add_param(batched.body.type(v)));
      for (ir::ValueId r : ir::inline_region(all.body, batched.body, args)) all.body.results.push_back(r);
      for (Array& a : batched_inputs(examples, pattern)) inputs.push_back(std::move(a));
    }
    try {
      std::vector<Array> want = fx::eval::run(all, inputs);
      std::vector<Array> got = fx::driver::compile(all, backend()).executable->run(inputs);
      ASSERT_EQ(got.size(), want.size());
      for (size_t r = 0; r < want.size(); ++r) {
        EXPECT_ARRAY(got[r], want[r].dtype(), want[r].shape(), want[r].to_doubles(), s.tol) << "result " << r;
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "op '" << s.op << "': " << e.what();
    }
  }
}
