// Collectives inside compiled programs (fluxion/ops.h), on every backend, on whatever number of
// ranks mpirun started: values against the host collectives' results computed here from every
// rank's inputs, bit for bit; gradients (reverse and forward mode) against central finite
// differences of the job's function, each rank's input perturbed in turn; and the Errors for
// what is not supported.
#include <gtest/gtest.h>

#include <fluxion/autodiff.h>
#include <fluxion/distributed.h>
#include <fluxion/error.h>
#include <fluxion/jit.h>
#include <fluxion/ops.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "ir/ir.h"
#include "jit/pipeline.h"

namespace fx = fluxion;
namespace dist = fluxion::distributed;
using fx::Array;
using fx::Tensor;

namespace {

class ProgramCollectives : public ::testing::TestWithParam<fx::Backend> {};

// Rank r's values: sums of them depend on the order of the additions.
Array values(const fx::Shape& shape, int r, fx::DType t = fx::f32) {
  std::vector<double> v(static_cast<size_t>(fx::numel(shape)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = std::sin(1.3 * static_cast<double>(i) + 2.1 * r) + (r % 2 ? 1e-3 : 1e3) / (3.0 + static_cast<double>(i));
  return fx::testing::make(t, v, shape);
}

// Rank r's values for derivatives: moderate, distinct on every rank and element (no ties).
Array smooth(const fx::Shape& shape, int r, double scale, fx::DType t = fx::f64) {
  std::vector<double> v(static_cast<size_t>(fx::numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * std::sin(1.3 * static_cast<double>(i) + 2.1 * r + 0.5);
  return fx::testing::make(t, v, shape);
}

fx::Compiled compile1(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                      const std::vector<fx::TensorType>& types, fx::Backend b) {
  return fx::compile_flat(fn, types, b);
}

template <class T>
void expect_same(const Array& got, const std::vector<T>& want, const std::string& what) {
  std::vector<T> g = got.to_vector<T>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) EXPECT_EQ(g[i], want[i]) << what << " element " << i;
}

// Every collective of a program in dtype T (6 elements: not a multiple of 4 ranks), against the
// same computed here from every rank's inputs.
template <class T>
void check_values(fx::DType t, fx::Backend backend) {
  int n = dist::size(), me = dist::rank();
  fx::Shape shape{2, 3};
  fx::Compiled c = compile1(
      [&](const std::vector<Tensor>& in) {
        const Tensor& x = in[0];
        return std::vector<Tensor>{fx::all_reduce(x, fx::ReduceOp::Sum),
                                   fx::all_reduce(x, fx::ReduceOp::Mean),
                                   fx::all_reduce(x, fx::ReduceOp::Max),
                                   fx::all_reduce(x, fx::ReduceOp::Min),
                                   fx::all_gather(x, 0),
                                   fx::all_gather(x, 1),
                                   fx::reduce_scatter(in[1], 1),
                                   fx::broadcast_from(x, n - 1),
                                   fx::rank_index()};
      },
      {{t, shape}, {t, {2, 2 * n}}}, backend);
  std::vector<Array> out = c.run({values(shape, me, t), values({2, 2 * n}, me, t)});
  std::vector<std::vector<T>> x, y;
  for (int r = 0; r < n; ++r) {
    x.push_back(values(shape, r, t).to_vector<T>());
    y.push_back(values({2, 2 * n}, r, t).to_vector<T>());
  }
  std::vector<T> sum = x[0], mx = x[0], mn = x[0], mean, gather0, gather1, scattered;
  for (int r = 1; r < n; ++r) {
    for (size_t i = 0; i < sum.size(); ++i) {
      sum[i] = sum[i] + x[r][i];
      mx[i] = std::max(mx[i], x[r][i]);
      mn[i] = std::min(mn[i], x[r][i]);
    }
  }
  for (T s : sum) mean.push_back(s / static_cast<T>(n));
  for (int r = 0; r < n; ++r) gather0.insert(gather0.end(), x[r].begin(), x[r].end());
  for (int row = 0; row < 2; ++row)
    for (int r = 0; r < n; ++r) gather1.insert(gather1.end(), x[r].begin() + 3 * row, x[r].begin() + 3 * row + 3);
  for (int row = 0; row < 2; ++row) {
    for (int col = 2 * me; col < 2 * me + 2; ++col) {
      T s = y[0][static_cast<size_t>(row * 2 * n + col)];
      for (int r = 1; r < n; ++r) s = s + y[r][static_cast<size_t>(row * 2 * n + col)];
      scattered.push_back(s);
    }
  }
  expect_same(out[0], sum, "all_reduce sum");
  expect_same(out[1], mean, "all_reduce mean");
  expect_same(out[2], mx, "all_reduce max");
  expect_same(out[3], mn, "all_reduce min");
  EXPECT_EQ(out[4].shape(), (fx::Shape{2 * n, 3}));
  expect_same(out[4], gather0, "all_gather axis 0");
  EXPECT_EQ(out[5].shape(), (fx::Shape{2, 3 * n}));
  expect_same(out[5], gather1, "all_gather axis 1");
  EXPECT_EQ(out[6].shape(), (fx::Shape{2, 2}));
  expect_same(out[6], scattered, "reduce_scatter axis 1");
  expect_same(out[7], x[static_cast<size_t>(n - 1)], "broadcast_from the last rank");
  EXPECT_EQ(out[8].item(), me);
}

TEST_P(ProgramCollectives, ValuesAreTheHostCollectivesBitForBit) {
  check_values<float>(fx::f32, GetParam());
  check_values<double>(fx::f64, GetParam());
}

// A job's loss: f(x, w) on every rank, x differentiated, w each rank's fixed weights. The job's
// function counts an invariant result once and sums a varying one over the ranks.
struct Case {
  std::string name;
  std::function<Tensor(const Tensor& x, const Tensor& w)> f;
  bool invariant;
};

std::vector<Case> cases() {
  using fx::ReduceOp;
  return {
      {"all_reduce sum, shared result",
       [](const Tensor& x, const Tensor& w) { return fx::sum(fx::square(fx::all_reduce(x * w))); }, true},
      {"all_reduce mean used by each rank",
       [](const Tensor& x, const Tensor& w) { return fx::sum(fx::sin(fx::all_reduce(x, ReduceOp::Mean)) * w * x); },
       false},
      {"all_reduce max times a sum",
       [](const Tensor& x, const Tensor& w) {
         return fx::sum(fx::all_reduce(x * w, ReduceOp::Max) * fx::all_reduce(x, ReduceOp::Sum));
       },
       true},
      {"all_reduce min",
       [](const Tensor& x, const Tensor& w) { return fx::sum(fx::exp(fx::all_reduce(x + w, ReduceOp::Min))); }, true},
      {"all_gather along axis 1",
       [](const Tensor& x, const Tensor& w) { return fx::sum(fx::tanh(fx::all_gather(x, 1)) * fx::all_gather(w, 1)); },
       true},
      {"all_gather used by each rank",
       [](const Tensor& x, const Tensor& w) { return fx::sum(fx::all_gather(x * x, 0)) * fx::sum(w); }, false},
      {"reduce_scatter",
       [](const Tensor& x, const Tensor&) {
         return fx::sum(fx::square(fx::reduce_scatter(fx::concat({x, x * x}, 0), 0)));
       },
       false},
      {"broadcast_from the last rank times each rank's x",
       [](const Tensor& x, const Tensor& w) { return fx::sum(fx::broadcast_from(x, dist::size() - 1) * x * w); },
       false},
      {"a shared value computed from shared values",
       [](const Tensor& x, const Tensor& w) {
         Tensor m = fx::all_reduce(x, ReduceOp::Mean);
         Tensor s = fx::all_reduce(m * x * w, ReduceOp::Sum);
         return fx::sum(s * s + m);
       },
       true},
  };
}

// The job's loss at every rank's x (each rank's own), from the interpreter in f64.
double job_loss(const Case& k, const Array& x, const Array& w) {
  fx::Compiled c = compile1([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{k.f(in[0], in[1])}; },
                            {x.type(), w.type()}, fx::Backend::Interp);
  Array l = c.run({x, w})[0];
  if (!k.invariant) dist::all_reduce(l, fx::ReduceOp::Sum);
  return l.item();
}

// d job loss / d x on this rank, by central differences: every rank's elements moved in turn.
std::vector<double> finite_differences(const Case& k, const Array& x, const Array& w) {
  std::vector<double> mine(static_cast<size_t>(x.size()));
  const double h = 1e-6;
  for (int r = 0; r < dist::size(); ++r) {
    for (int64_t i = 0; i < x.size(); ++i) {
      double at[2];
      for (int s = 0; s < 2; ++s) {
        std::vector<double> v = x.to_doubles();
        if (r == dist::rank()) v[static_cast<size_t>(i)] += s ? -h : h;
        at[s] = job_loss(k, Array(v, x.shape()), w);
      }
      if (r == dist::rank()) mine[static_cast<size_t>(i)] = (at[0] - at[1]) / (2 * h);
    }
  }
  return mine;
}

TEST_P(ProgramCollectives, GradientsAreTheJobsFiniteDifferences) {
  int me = dist::rank();
  fx::Shape shape{2, 3};
  Array x = smooth(shape, me, 0.9), w = smooth(shape, me + 7, 0.5);
  for (const Case& k : cases()) {
    SCOPED_TRACE(k.name);
    std::vector<double> fd = finite_differences(k, x, w);
    fx::Compiled g = compile1(
        [&](const std::vector<Tensor>& in) {
          return fx::grad([&](const Tensor& a, const Tensor& b) { return k.f(a, b); })(in[0], in[1]);
        },
        {x.type(), w.type()}, GetParam());
    std::vector<double> got = g.run({x, w})[0].to_doubles();
    for (size_t i = 0; i < fd.size(); ++i) EXPECT_NEAR(got[i], fd[i], 1e-6 * (1 + std::abs(fd[i]))) << "element " << i;
    // Forward mode: the job's directional derivative along every rank's tangent t.
    Array t = smooth(shape, me + 3, 0.2);
    fx::Compiled jv = compile1(
        [&](const std::vector<Tensor>& in) {
          auto [value, tangent] = fx::jvp([&](const Tensor& a, const Tensor& b) { return k.f(a, b); },
                                          std::make_tuple(in[0], in[1]), {in[2]});
          return std::vector<Tensor>{tangent};
        },
        {x.type(), w.type(), t.type()}, GetParam());
    Array directional = jv.run({x, w, t})[0];
    if (!k.invariant) dist::all_reduce(directional, fx::ReduceOp::Sum);
    double want = 0;
    std::vector<double> tv = t.to_doubles();
    for (size_t i = 0; i < fd.size(); ++i) want += fd[i] * tv[i];
    Array total = Array::scalar(want);
    dist::all_reduce(total, fx::ReduceOp::Sum);
    EXPECT_NEAR(directional.item(), total.item(), 1e-6 * (1 + std::abs(total.item())));
  }
}

TEST_P(ProgramCollectives, ForwardRunsThroughCollectivesInLoopsOrSaysWhereNot) {
  int n = dist::size(), me = dist::rank();
  auto step = [](const std::vector<Tensor>& in) {
    Tensor out = fx::scan(
                     [](const Tensor& c, const Tensor& x) {
                       Tensor next = fx::all_reduce(c * 0.5 + x, fx::ReduceOp::Sum);
                       return std::make_pair(next, next);
                     },
                     in[0], in[1])
                     .first;
    return std::vector<Tensor>{out};
  };
  Array c0 = values({3}, me), xs = values({4, 3}, me + 1);
  if (GetParam() == fx::Backend::Vulkan) {
    EXPECT_THROW(compile1(step, {c0.type(), xs.type()}, GetParam()), fx::Error);
    return;
  }
  std::vector<float> c = c0.to_vector<float>();
  std::vector<std::vector<float>> cs(static_cast<size_t>(n)), xss(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    cs[static_cast<size_t>(r)] = values({3}, r).to_vector<float>();
    xss[static_cast<size_t>(r)] = values({4, 3}, r + 1).to_vector<float>();
  }
  for (int t = 0; t < 4; ++t) {
    std::vector<float> next(3);
    for (size_t i = 0; i < 3; ++i) {
      float s = 0;
      for (int r = 0; r < n; ++r) {
        float term = cs[static_cast<size_t>(r)][i] * 0.5f + xss[static_cast<size_t>(r)][static_cast<size_t>(t) * 3 + i];
        s = r == 0 ? term : s + term;
      }
      next[i] = s;
    }
    for (auto& cr : cs) cr = next;
  }
  expect_same(compile1(step, {c0.type(), xs.type()}, GetParam()).run({c0, xs})[0], cs[0], "scan carry");
  auto loss = [&](const std::vector<Tensor>& in) {
    return fx::grad([&](const Tensor& a, const Tensor& b) { return fx::sum(step({a, b})[0]); })(in[0], in[1]);
  };
  EXPECT_THROW(compile1(loss, {c0.type(), xs.type()}, GetParam()), fx::Error);
}

// The last layer's gradient is exchanged while the first layer's is computed: its all-reduce
// starts before the backward pass's last product and is waited for after it.
TEST_P(ProgramCollectives, ExchangesStartAsSoonAsTheirOperandIsReady) {
  if (GetParam() == fx::Backend::Interp) GTEST_SKIP() << "the interpreter runs the graph as it is";
  auto step = [](const std::vector<Tensor>& in) {
    auto loss = [&](const Tensor& w1, const Tensor& w2) {
      return fx::sum(fx::square(fx::matmul(fx::tanh(fx::matmul(in[2], w1)), w2)));
    };
    std::vector<Tensor> g = fx::grad(loss, {0, 1})(in[0], in[1]);
    return std::vector<Tensor>{fx::all_reduce(g[0], fx::ReduceOp::Mean), fx::all_reduce(g[1], fx::ReduceOp::Mean)};
  };
  fx::Compiled c = compile1(step, {{fx::f32, {8, 16}}, {fx::f32, {16, 4}}, {fx::f32, {32, 8}}}, GetParam());
  std::string k = c.kernels();
  size_t first_start = k.find("all_reduce_mean on the host"), last_product = k.rfind("matmul"),
         first_wait = k.find("wait for all_reduce_mean");
  ASSERT_NE(first_start, std::string::npos) << k;
  ASSERT_NE(first_wait, std::string::npos) << k;
  EXPECT_LT(first_start, last_product) << k;
  EXPECT_GT(first_wait, last_product) << k;
  std::vector<Array> in{smooth({8, 16}, 0, 0.3, fx::f32), smooth({16, 4}, 1, 0.3, fx::f32),
                        smooth({32, 8}, dist::rank(), 1.0, fx::f32)};
  std::vector<Array> out = c.run(in);
  std::vector<Array> want =
      compile1(step, {{fx::f32, {8, 16}}, {fx::f32, {16, 4}}, {fx::f32, {32, 8}}}, fx::Backend::Interp).run(in);
  for (size_t i = 0; i < out.size(); ++i) {
    std::vector<float> a = out[i].to_vector<float>(), b = want[i].to_vector<float>();
    for (size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], 1e-4 * (1 + std::abs(b[j])));
  }
}

TEST_P(ProgramCollectives, AProgramTracedForAnotherJobSizeIsAnError) {
  // A job of 3 ranks is never started by the suite.
  auto text = "func @main(%0: f32[4]) -> (f32[4]) {\n  %1 = all_reduce_sum %0 {ranks=3} : f32[4]\n  return %1\n}\n";
  auto compiled = fx::driver::compile(fx::ir::parse(text), GetParam());
  try {
    compiled.executable->run({values({4}, 0)});
    FAIL() << "expected an Error";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("traced for a job of 3 rank(s)"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, ProgramCollectives, ::testing::ValuesIn(fx::available_backends()),
                         [](const ::testing::TestParamInfo<fx::Backend>& info) {
                           return std::string(fx::backend_name(info.param));
                         });

}  // namespace
