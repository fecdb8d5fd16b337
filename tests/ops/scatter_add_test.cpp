// scatter_add: every backend's result is bit for bit a host loop that adds the updates in index
// order in the dtype (so the backends agree with each other bit for bit), with repeated and
// clamped indices, axes 0 and 1, multi-dimensional and scalar indices; large scatters that the
// CPU splits across threads and the GPU into blocks of rows give the same bits in every run and
// at every thread count.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/kernel_listing.h"
#include "common/scoped_env.h"
#include "common/test_names.h"

class ScatterAddOps : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(ScatterAddOps);

namespace {

struct Case {
  Shape updates;
  Shape indices;
  std::vector<double> index_values;
  int64_t dim;
  int64_t axis;
};

// The result shape: the updates' with the indices' dimensions at the axis replaced by dim.
Shape result_shape(const Case& c, int64_t ax) {
  Shape out(c.updates.begin(), c.updates.begin() + ax);
  out.push_back(c.dim);
  out.insert(out.end(), c.updates.begin() + ax + static_cast<int64_t>(c.indices.size()), c.updates.end());
  return out;
}

// out[a, clamp(idx[i]), b] += updates[a, i, b] for i = 0, 1, ... in dtype t's arithmetic.
std::vector<double> host_scatter(DType t, const std::vector<double>& u, const std::vector<double>& idx,
                                 const Shape& out_shape, int64_t ax) {
  int64_t outer = 1, inner = 1, rows = out_shape[static_cast<size_t>(ax)];
  for (int64_t d = 0; d < static_cast<int64_t>(out_shape.size()); ++d) {
    if (d < ax) outer *= out_shape[static_cast<size_t>(d)];
    if (d > ax) inner *= out_shape[static_cast<size_t>(d)];
  }
  int64_t n = static_cast<int64_t>(idx.size());
  std::vector<float> f(static_cast<size_t>(count(out_shape)), 0.0f);
  std::vector<double> d(f.size(), 0.0);
  std::vector<uint32_t> w(f.size(), 0);
  for (int64_t a = 0; a < outer; ++a) {
    for (int64_t i = 0; i < n; ++i) {
      int64_t c = std::clamp<int64_t>(static_cast<int64_t>(idx[static_cast<size_t>(i)]), 0, rows - 1);
      for (int64_t b = 0; b < inner; ++b) {
        auto dst = static_cast<size_t>((a * rows + c) * inner + b);
        double x = u[static_cast<size_t>((a * n + i) * inner + b)];
        f[dst] += static_cast<float>(x);
        d[dst] += x;
        w[dst] += static_cast<uint32_t>(static_cast<int32_t>(x));
      }
    }
  }
  std::vector<double> out;
  for (size_t k = 0; k < f.size(); ++k) {
    out.push_back(t == fx::f32 ? static_cast<double>(f[k]) : t == fx::f64 ? d[k] : static_cast<int32_t>(w[k]));
  }
  return out;
}

// Equal bit patterns (as doubles: an f32 converts exactly), so that -0 differs from +0.
::testing::AssertionResult same_bits(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " elements, want " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::bit_cast<uint64_t>(got[i]) != std::bit_cast<uint64_t>(want[i]))
      return ::testing::AssertionFailure() << "element " << i << ": " << got[i] << ", want " << want[i];
  }
  return ::testing::AssertionSuccess();
}

// Updates whose magnitudes span six decades: the sums' rounding then depends on their order.
std::vector<double> updates_for(DType t, int64_t n, uint32_t seed) {
  if (t == fx::i32) return random_ints(n, -1000, 1000, seed);
  std::vector<double> v = random_doubles(n, -1, 1, seed), scale = random_ints(n, -3, 3, seed + 1);
  for (size_t i = 0; i < v.size(); ++i) v[i] *= std::pow(10.0, scale[i]);
  return round_all(t, v);
}

}  // namespace

TEST_P(ScatterAddOps, MatchesAHostLoopBitForBit) {
  const std::vector<Case> cases = {
      // Rows 0 and 3 reached by clamping (-1, 7), row 1 by nothing, row 2 three times.
      {{6, 3}, {6}, {2, 0, 2, -1, 7, 2}, 4, 0},
      {{2, 5, 3}, {5}, {1, 1, 4, -3, 0}, 3, 1},
      // Two-dimensional indices, the axis given from the end.
      {{2, 2, 3}, {2, 3}, {0, 4, 0, 1, 1, 0}, 2, -1},
      // A scalar index: one update row.
      {{3}, {}, {2}, 4, 0},
      // No indices: zeros.
      {{0, 3}, {0}, {}, 2, 0},
  };
  for (DType t : dtypes_on(backend(), {fx::f32, fx::f64, fx::i32})) {
    for (size_t k = 0; k < cases.size(); ++k) {
      const Case& c = cases[k];
      SCOPED_TRACE(std::string(fx::dtype_name(t)) + " case " + std::to_string(k));
      int64_t ax = c.axis < 0 ? c.axis + static_cast<int64_t>(c.updates.size() - c.indices.size()) + 1 : c.axis;
      std::vector<double> u = updates_for(t, count(c.updates), static_cast<uint32_t>(k) + 1);
      int64_t dim = c.dim, axis = c.axis;
      auto f = jit([dim, axis](Tensor x, Tensor i) { return fx::scatter_add(x, i, dim, axis); });
      Array got = f(make(t, u, c.updates), make(fx::i32, c.index_values, c.indices));
      ASSERT_EQ(got.shape(), result_shape(c, ax));
      EXPECT_TRUE(same_bits(got.to_doubles(), host_scatter(t, u, c.index_values, got.shape(), ax)));
    }
  }
}

// Large enough for the CPU to split the kernel across threads (by rows with the axis first, by
// outer index otherwise) and for the GPU to cut the rows into blocks (the cpu tuning class: the
// gpu class sorts this many indices, below): the same bits as the host loop, in every run and
// with one or two threads.
TEST_P(ScatterAddOps, LargeScattersAreTheSameBitsInEveryRun) {
  fx::testing::ScopedEnv tuning("FLUXION_VULKAN_TUNING", "cpu");
  struct Big {
    Shape updates;
    int64_t dim, axis;
  };
  int saved_threads = fx::num_threads();
  for (const Big& c : {Big{{3000, 48}, 2500, 0}, Big{{8, 1500, 24}, 700, 1}}) {
    for (DType t : dtypes_on(backend(), {fx::f32, fx::f64})) {
      SCOPED_TRACE(std::string(fx::dtype_name(t)) + " axis " + std::to_string(c.axis));
      int64_t n = c.updates[static_cast<size_t>(c.axis)];
      std::vector<double> idx = random_ints(n, -5, c.dim + 5, 7);
      std::vector<double> u = updates_for(t, count(c.updates), 8);
      Array x = make(t, u, c.updates), i = make(fx::i32, idx, {n});
      int64_t dim = c.dim, axis = c.axis;
      auto f = jit([dim, axis](Tensor x, Tensor i) { return fx::scatter_add(x, i, dim, axis); });
      std::string listing = f.lower(x, i).kernels();
      if (backend() != Backend::Interp) {
        std::string kind = backend() == Backend::Cpu ? "scatter[rows]" : "scatter[row-blocks]";
        EXPECT_EQ(kernel_strategies(listing), std::vector<std::string>{kind}) << listing;
      }
      Shape out_shape = c.updates;
      out_shape[static_cast<size_t>(c.axis)] = c.dim;
      std::vector<double> want = host_scatter(t, u, idx, out_shape, c.axis);
      for (int threads : {1, 2, 1, 2}) {
        fx::set_num_threads(threads);
        Array got = f(x, i);
        ASSERT_EQ(got.shape(), out_shape);
        EXPECT_TRUE(same_bits(got.to_doubles(), want)) << threads << " thread(s)";
      }
    }
  }
  fx::set_num_threads(saved_threads);
}

// Updates computed in the same program (a product and an elementwise chain) and a result read
// by more elementwise work: the scatter stays a kernel of its own, its neighbours fused around it.
TEST_P(ScatterAddOps, InsideALargerProgram) {
  FLUXION_REQUIRE_F64(backend());
  std::vector<double> idx = {3, 1, 3, 0, 9};
  auto f = jit([](Tensor a, Tensor w, Tensor i) {
    Tensor rows = fx::tanh(fx::matmul(a, w)) * 2.0;  // [5, 4]
    return fx::exp(fx::scatter_add(rows, i, 6)) - 1.0;
  });
  Array a = make(fx::f64, random_doubles(15, -1, 1, 3), {5, 3}),
        w = make(fx::f64, random_doubles(12, -1, 1, 4), {3, 4});
  Array got = f(a, w, make(fx::i32, idx, {5}));
  std::vector<double> av = a.to_doubles(), wv = w.to_doubles(), rows(20);
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t c = 0; c < 4; ++c) {
      double s = 0;
      for (int64_t k = 0; k < 3; ++k) s += av[static_cast<size_t>(r * 3 + k)] * wv[static_cast<size_t>(k * 4 + c)];
      rows[static_cast<size_t>(r * 4 + c)] = std::tanh(s) * 2.0;
    }
  std::vector<double> want = host_scatter(fx::f64, rows, idx, {6, 4}, 0);
  for (double& v : want) v = std::exp(v) - 1.0;
  EXPECT_ARRAY(got, fx::f64, {6, 4}, want, Tol::sum(3, 2));
}

// In a loop body: the CPU's nested kernel, and on Vulkan a block of the loop's one-workgroup
// shader (its 64 invocations sharing the rows and columns); the same bits as on the host.
TEST_P(ScatterAddOps, InsideALoopBody) {
  std::vector<double> idx = {2, 0, 2, -1, 7, 2};
  for (DType t : dtypes_on(backend(), {fx::f32, fx::f64})) {
    SCOPED_TRACE(fx::dtype_name(t));
    std::vector<double> u = updates_for(t, 18, 5);
    auto f = jit([t](Tensor x, Tensor i) {
      return fx::fori_loop(
          0, 3, [&](Tensor, Tensor acc) { return fx::scatter_add(x, i, 4) + acc * 0.5; }, fx::zeros({4, 3}, t));
    });
    Array got = f(make(t, u, {6, 3}), make(fx::i32, idx, {6}));
    // acc = s + acc / 2 three times from 0, in the dtype (halving is exact).
    std::vector<double> s = host_scatter(t, u, idx, {4, 3}, 0), want(s.size(), 0.0);
    for (int step = 0; step < 3; ++step) {
      for (size_t k = 0; k < s.size(); ++k) want[k] = round_to(t, s[k] + want[k] * 0.5);
    }
    EXPECT_TRUE(same_bits(got.to_doubles(), want));
  }
}

// Many indices: a GPU (the gpu tuning class, forced on any Vulkan device) sorts them by row in
// one workgroup and sums each result element's run, instead of scanning every index per
// invocation. Rows more than the sort's workgroup (its prefix sum in chunks), a last partial
// round, one row taking every index, a skewed vocabulary with clamped strays, an outer
// dimension: the same bits as the host loop on every backend, in every run.
TEST_P(ScatterAddOps, ManyIndicesSortedByRowAreTheSameBits) {
  fx::testing::ScopedEnv tuning("FLUXION_VULKAN_TUNING", "gpu");
  struct Many {
    Shape updates;
    int64_t dim, axis;
    std::vector<double> idx;
  };
  std::vector<double> skewed = random_ints(4099, -2, 70, 11);
  for (size_t k = 0; k < skewed.size(); k += 2) skewed[k] = 1;  // half of them on one row
  std::vector<Many> cases = {
      {{3000, 8}, 2500, 0, random_ints(3000, -5, 2505, 7)},
      {{4099, 16}, 65, 0, skewed},
      {{1024, 3}, 1, 0, std::vector<double>(1024, 0.0)},
      {{3, 1500, 5}, 700, 1, random_ints(1500, 0, 699, 9)},
  };
  for (const Many& c : cases) {
    for (DType t : dtypes_on(backend(), {fx::f32, fx::f64, fx::i32})) {
      SCOPED_TRACE(std::string(fx::dtype_name(t)) + " " + fx::shape_str(c.updates) + " into " + std::to_string(c.dim));
      int64_t n = static_cast<int64_t>(c.idx.size());
      std::vector<double> u = updates_for(t, count(c.updates), 12);
      Array x = make(t, u, c.updates), i = make(fx::i32, c.idx, {n});
      int64_t dim = c.dim, axis = c.axis;
      auto f = jit([dim, axis](Tensor x, Tensor i) { return fx::scatter_add(x, i, dim, axis); });
      if (backend() == Backend::Vulkan) {
        std::string listing = f.lower(x, i).kernels();
        EXPECT_EQ(kernel_strategies(listing), std::vector<std::string>{"scatter[sorted-rows]"}) << listing;
      }
      Shape out_shape = c.updates;
      out_shape[static_cast<size_t>(c.axis)] = c.dim;
      std::vector<double> want = host_scatter(t, u, c.idx, out_shape, c.axis);
      for (int run = 0; run < 2; ++run) EXPECT_TRUE(same_bits(f(x, i).to_doubles(), want)) << "run " << run;
    }
  }
}

// An embedding's gradient (take's adjoint is a scatter_add) under a branch and in a scan body,
// sorted on a GPU: the same bits as the host loop.
TEST_P(ScatterAddOps, SortedScattersInsideBranchesAndLoops) {
  fx::testing::ScopedEnv tuning("FLUXION_VULKAN_TUNING", "gpu");
  std::vector<double> idx = random_ints(2048, 0, 40, 21);
  std::vector<double> u = updates_for(fx::f32, 2048 * 4, 22);
  Array x = make(fx::f32, u, {2048, 4}), i = make(fx::i32, idx, {2048});
  std::vector<double> once = host_scatter(fx::f32, u, idx, {41, 4}, 0);
  auto branch = jit([](Tensor x, Tensor i, Tensor p) {
    return fx::cond(
        p, [&] { return fx::scatter_add(x, i, 41); },
        [&] {
          return fx::zeros({41, 4});
        });
  });
  Array yes(std::vector<bool>{true}, {}), no(std::vector<bool>{false}, {});
  auto sorted_in = [&](const std::string& listing) {
    std::vector<std::string> k = kernel_strategies(listing);
    return backend() != Backend::Vulkan || std::count(k.begin(), k.end(), "scatter[sorted-rows]") == 1;
  };
  EXPECT_TRUE(sorted_in(branch.lower(x, i, yes).kernels())) << branch.lower(x, i, yes).kernels();
  EXPECT_TRUE(same_bits(branch(x, i, yes).to_doubles(), once));
  EXPECT_TRUE(same_bits(branch(x, i, no).to_doubles(), std::vector<double>(once.size(), 0.0)));
  auto loop = jit([](Tensor x, Tensor i) {
    return fx::fori_loop(
        0, 2, [&](Tensor, Tensor acc) { return fx::scatter_add(x, i, 41) + acc * 0.5; }, fx::zeros({41, 4}));
  });
  std::vector<double> want(once.size(), 0.0);
  for (int step = 0; step < 2; ++step) {
    for (size_t k = 0; k < once.size(); ++k) want[k] = round_to(fx::f32, once[k] + want[k] * 0.5);
  }
  EXPECT_TRUE(same_bits(loop(x, i).to_doubles(), want));
  // Recorded step by step rather than as one loop shader: each step sorts again.
  fx::testing::ScopedEnv unrolled("FLUXION_VULKAN_LOOP_KERNELS", "0");
  auto recorded = jit([](Tensor x, Tensor i) {
    return fx::fori_loop(
        0, 2, [&](Tensor, Tensor acc) { return fx::scatter_add(x, i, 41) + acc * 0.5; }, fx::zeros({41, 4}));
  });
  EXPECT_TRUE(sorted_in(recorded.lower(x, i).kernels())) << recorded.lower(x, i).kernels();
  EXPECT_TRUE(same_bits(recorded(x, i).to_doubles(), want));
}
