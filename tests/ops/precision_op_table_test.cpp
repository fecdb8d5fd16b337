// Every op of the op table in f16 and bf16 on every backend: each sample program
// (common/op_samples.h) with its f64 types written f16 or bf16, on inputs drawn from its domains
// and rounded to the dtype, against the reference evaluator running the same program, which
// computes each op in double and rounds its result once. i32 and bool results are exact; float
// results within one unit in the last place of the dtype (the backends compute each op in f32
// and round once, their functions within an ulp of f32) and, where the op sums, within f32
// accumulation's error of a result that cancels to near zero.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "common/op_samples.h"
#include "common/test_names.h"
#include "eval/interpreter.h"
#include "ir/ir.h"
#include "jit/pipeline.h"

namespace ir = fluxion::ir;

namespace {

// The sample with every f64 type written as `dt`; empty when it has none.
std::string in_dtype(const std::string& text, DType dt) {
  std::string out = text, from = "f64[", to = std::string(fx::dtype_name(dt)) + "[";
  bool any = false;
  for (size_t at = out.find(from); at != std::string::npos; at = out.find(from, at + to.size())) {
    out.replace(at, from.size(), to);
    any = true;
  }
  return any ? out : "";
}

// The spacing of dt's values at |v| (its subnormals' below the smallest normal).
double ulp(DType dt, double v) {
  int bits = dt == fx::f16 ? 11 : 8, min_exp = dt == fx::f16 ? -14 : -126;
  int e = v == 0 ? min_exp : std::max(static_cast<int>(std::floor(std::log2(std::abs(v)))), min_exp);
  return std::ldexp(1.0, e - (bits - 1));
}

// "" when `got` is within the tolerance of `want`, else the first element that is not.
std::string compare(const Array& got, const Array& want) {
  if (got.type() != want.type()) return "type " + got.type().str() + ", expected " + want.type().str();
  std::vector<double> g = got.to_doubles(), w = want.to_doubles();
  DType dt = want.dtype();
  double largest = 0;
  for (double v : w)
    if (std::isfinite(v)) largest = std::max(largest, std::abs(v));
  for (size_t i = 0; i < w.size(); ++i) {
    bool ok = std::isnan(w[i])                       ? std::isnan(g[i])
              : !fx::is_half(dt) || std::isinf(w[i]) ? g[i] == w[i]
                                                     : std::abs(g[i] - w[i]) <= ulp(dt, w[i]) + 0x1p-20 * largest;
    if (!ok) {
      return "element " + std::to_string(i) + ": got " + std::to_string(g[i]) + ", want " + std::to_string(w[i]);
    }
  }
  return "";
}

class PrecisionOpTable : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(PrecisionOpTable);

}  // namespace

TEST_P(PrecisionOpTable, EveryOpInF16AndBf16IsWithinAnUlpOfTheEvaluator) {
  // Compiling 148 programs takes lavapipe about 20 s: the runs that emulate other memory and
  // capabilities leave it to the precision suite, which they repeat in full.
  if (backend() == Backend::Vulkan && (std::getenv("FLUXION_VULKAN_PROFILE") || std::getenv("FLUXION_VULKAN_DISABLE")))
    GTEST_SKIP() << "under an emulated device the precision suite covers 16-bit memory";
  int checked = 0;
  for (DType dt : {fx::f16, fx::bf16}) {
    for (const Sample& s : samples()) {
      std::string text = in_dtype(s.text, dt);
      if (text.empty()) continue;
      SCOPED_TRACE("op '" + s.op + "' in " + fx::dtype_name(dt) + " on " + fx::backend_name(backend()));
      try {
        ir::Program p = ir::parse(text);
        std::vector<Array> inputs = make_inputs(p, s);
        std::vector<Array> want = fx::eval::run(p, inputs);
        std::vector<Array> got = fx::driver::compile(p, backend()).executable->run(inputs);
        ASSERT_EQ(got.size(), want.size());
        for (size_t r = 0; r < want.size(); ++r) {
          std::string failure = compare(got[r], want[r]);
          EXPECT_TRUE(failure.empty()) << "result " << r << ": " << failure << "\n" << text;
        }
        ++checked;
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what() << "\n" << text;
      }
    }
  }
  EXPECT_GT(checked, 100) << "the samples have no f64 types to write as f16 and bf16";
}
