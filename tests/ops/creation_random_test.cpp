// Creation ops (zeros, ones, full, zeros_like, ones_like, arange, constant, scalar), random
// numbers (determinism, distinct keys and fold_in, the documented Philox streams, statistics),
// multiple outputs through std::tuple / std::pair / std::vector, and retracing for new shapes.
#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/test_names.h"

class Creation : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Creation);

TEST_P(Creation, ZerosOnesFull) {
  for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64, fx::i32, fx::boolean})) {
    SCOPED_TRACE(fx::dtype_name(dt));
    auto f = jit([dt]() {
      return std::make_tuple(fx::zeros({2, 3}, dt), fx::ones({3}, dt), fx::full({2, 2}, 7, dt), fx::zeros({}, dt),
                             fx::ones({0, 4}, dt), fx::full({1, 1, 2}, -3, dt));
    });
    auto [z, o, fu, z0, oe, neg] = f();
    EXPECT_ARRAY(z, dt, {2, 3}, {0, 0, 0, 0, 0, 0});
    EXPECT_ARRAY(o, dt, {3}, {1, 1, 1});
    EXPECT_ARRAY(fu, dt, {2, 2}, round_all(dt, {7, 7, 7, 7}));
    EXPECT_ARRAY(z0, dt, {}, {0});
    EXPECT_ARRAY(oe, dt, {0, 4}, {});
    EXPECT_ARRAY(neg, dt, {1, 1, 2}, round_all(dt, {-3, -3}));
  }
  // Default dtype is f32; full rounds to the dtype.
  auto g = jit([]() { return std::make_pair(fx::zeros({2}), fx::full({2}, 0.1)); });
  auto [z, p] = g();
  EXPECT_ARRAY(z, fx::f32, {2}, {0, 0});
  EXPECT_ARRAY(p, fx::f32, {2}, {round_to(fx::f32, 0.1), round_to(fx::f32, 0.1)});
  EXPECT_EQ(p.to_vector<float>()[0], 0.1f);
}

TEST_P(Creation, LikeOpsFollowTheOperand) {
  for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64, fx::i32, fx::boolean})) {
    SCOPED_TRACE(fx::dtype_name(dt));
    auto f = jit([](Tensor x) { return std::make_pair(fx::zeros_like(x), fx::ones_like(x)); });
    auto [z, o] = f(make(dt, random_values(dt, 6, -3, 3, 4), {3, 1, 2}));
    EXPECT_ARRAY(z, dt, {3, 1, 2}, {0, 0, 0, 0, 0, 0});
    EXPECT_ARRAY(o, dt, {3, 1, 2}, {1, 1, 1, 1, 1, 1});
    auto [z0, o0] = f(make(dt, {}, {0}));
    EXPECT_ARRAY(z0, dt, {0}, {});
    EXPECT_ARRAY(o0, dt, {0}, {});
  }
  // Used in arithmetic with the operand.
  auto g = jit([](Tensor x) { return x + fx::ones_like(x) * 2.0; });
  EXPECT_ARRAY(g(make(fx::f32, {1, 2}, {2})), fx::f32, {2}, {3, 4});
}

TEST_P(Creation, Arange) {
  FLUXION_REQUIRE_F64(backend());
  auto f = jit([]() {
    return std::vector<Tensor>{
        fx::arange(5),                          // 0..4, i32
        fx::arange(2, 11, 3),                   // 2 5 8, i32
        fx::arange(10, 0, -3),                  // 10 7 4 1
        fx::arange(0, 1, 0.25, fx::f32),        // 0 .25 .5 .75
        fx::arange(-1, 1, 0.5, fx::f64),        // -1 -.5 0 .5
        fx::arange(1.5, 4, 1, fx::f32),         // 1.5 2.5 3.5
        fx::arange(0, 0.95, 0.1, fx::f64),      // 0 .1 ... .9 (10 values)
        fx::arange(0),                          // empty
        fx::arange(3, 3, 1),                    // empty
        fx::arange(5, 0, 1),                    // empty (wrong direction)
        fx::arange(4, fx::f32),                 // 0 1 2 3 as f32
    };
  });
  std::vector<Array> r = f();
  ASSERT_EQ(r.size(), 11u);
  EXPECT_ARRAY(r[0], fx::i32, {5}, {0, 1, 2, 3, 4});
  EXPECT_ARRAY(r[1], fx::i32, {3}, {2, 5, 8});
  EXPECT_ARRAY(r[2], fx::i32, {4}, {10, 7, 4, 1});
  EXPECT_ARRAY(r[3], fx::f32, {4}, {0, 0.25, 0.5, 0.75});
  EXPECT_ARRAY(r[4], fx::f64, {4}, {-1, -0.5, 0, 0.5});
  EXPECT_ARRAY(r[5], fx::f32, {3}, {1.5, 2.5, 3.5});
  std::vector<double> tenths;
  for (int i = 0; i < 10; ++i) tenths.push_back(0.1 * i);
  EXPECT_ARRAY(r[6], fx::f64, {10}, tenths);
  EXPECT_ARRAY(r[7], fx::i32, {0}, {});
  EXPECT_ARRAY(r[8], fx::i32, {0}, {});
  EXPECT_ARRAY(r[9], fx::i32, {0}, {});
  EXPECT_ARRAY(r[10], fx::f32, {4}, {0, 1, 2, 3});
}

TEST_P(Creation, ConstantAndScalar) {
  FLUXION_REQUIRE_F64(backend());
  Array cf = make(fx::f32, {1.5, -2.25, 3, 0.1}, {2, 2});
  Array cd = make(fx::f64, {0.1, 1e-300, -1e300}, {3});
  Array ci = make(fx::i32, {-2147483647, 0, 2147483647}, {3, 1});
  Array cb = make(fx::boolean, {1, 0, 1}, {3});
  Array ce = make(fx::f32, {}, {0, 3});
  auto f = jit([&]() {
    return std::make_tuple(fx::constant(cf), fx::constant(cd), fx::constant(ci), fx::constant(cb), fx::constant(ce),
                           fx::scalar(2.5), fx::scalar(-3, fx::i32), fx::scalar(1, fx::boolean),
                           fx::scalar(0.1, fx::f64));
  });
  auto [a, b, c, d, e, s1, s2, s3, s4] = f();
  EXPECT_ARRAY(a, fx::f32, {2, 2}, round_all(fx::f32, {1.5, -2.25, 3, 0.1}));
  EXPECT_ARRAY(b, fx::f64, {3}, {0.1, 1e-300, -1e300});
  EXPECT_EQ(b.to_vector<double>()[0], 0.1);
  EXPECT_ARRAY(c, fx::i32, {3, 1}, {-2147483647, 0, 2147483647});
  EXPECT_ARRAY(d, fx::boolean, {3}, {1, 0, 1});
  EXPECT_ARRAY(e, fx::f32, {0, 3}, {});
  EXPECT_ARRAY(s1, fx::f32, {}, {2.5});
  EXPECT_ARRAY(s2, fx::i32, {}, {-3});
  EXPECT_ARRAY(s3, fx::boolean, {}, {1});
  EXPECT_ARRAY(s4, fx::f64, {}, {0.1});
  // A constant combined with an input.
  auto g = jit([&](Tensor x) { return x * fx::constant(cf) + fx::scalar(1.0); });
  EXPECT_ARRAY(g(make(fx::f32, {2, 2, 2, 2}, {2, 2})), fx::f32, {2, 2},
               {round_to(fx::f32, 1.5 * 2 + 1), -3.5, 7, round_to(fx::f32, round_to(fx::f32, 0.1) * 2 + 1)});
}

// ---- Random numbers.

namespace {

// Philox-4x32-10 (Salmon et al., Random123), checked below against its published answers.
std::array<uint32_t, 4> philox(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = uint64_t{0xD2511F53} * c[0], p1 = uint64_t{0xCD9E8D57} * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
    k = {k[0] + 0x9E3779B9u, k[1] + 0xBB67AE85u};
  }
  return c;
}

std::array<uint32_t, 2> key_words(uint64_t seed) {
  return {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
}

// docs/ir.md: element i uses the counter (lo32(i), hi32(i), 0, 0).
double uniform_f32_ref(std::array<uint32_t, 2> k, uint64_t i) {
  auto w = philox({static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), 0, 0}, k);
  return static_cast<double>(w[0] >> 8) * 0x1p-24;
}
double uniform_f64_ref(std::array<uint32_t, 2> k, uint64_t i) {
  auto w = philox({static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), 0, 0}, k);
  return static_cast<double>(((uint64_t{w[0]} << 32) | w[1]) >> 11) * 0x1p-53;
}
double normal_ref(std::array<uint32_t, 2> k, uint64_t i) {
  auto w = philox({static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), 0, 0}, k);
  double u1 = (static_cast<double>(w[0]) + 1) * 0x1p-32, u2 = static_cast<double>(w[1]) * 0x1p-32;
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}
std::array<uint32_t, 2> fold_ref(std::array<uint32_t, 2> k, uint32_t data) {
  auto w = philox({data, 0, 1, 0}, k);
  return {w[0], w[1]};
}

struct Stats {
  double mean, var, lo, hi;
};
Stats stats(const std::vector<double>& v) {
  double s = 0, lo = v[0], hi = v[0];
  for (double x : v) s += x, lo = std::min(lo, x), hi = std::max(hi, x);
  double m = s / static_cast<double>(v.size()), q = 0;
  for (double x : v) q += (x - m) * (x - m);
  return {m, q / static_cast<double>(v.size()), lo, hi};
}

int count_equal(const std::vector<double>& a, const std::vector<double>& b) {
  int n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += a[i] == b[i];
  return n;
}

}  // namespace

class Random : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Random);

TEST(PhiloxReference, MatchesPublishedKnownAnswers) {
  EXPECT_EQ(philox({0, 0, 0, 0}, {0, 0}), (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST_P(Random, SameKeySameNumbers) {
  auto f = jit([]() {
    fx::Tensor k = fx::random::key(42);
    return std::make_tuple(fx::random::uniform(k, {1000}), fx::random::uniform(k, {1000}),
                           fx::random::normal(k, {1000}), fx::random::normal(k, {1000}));
  });
  auto [u1, u2, n1, n2] = f();
  EXPECT_ARRAY(u2, fx::f32, {1000}, u1.to_doubles());
  EXPECT_ARRAY(n2, fx::f32, {1000}, n1.to_doubles());
  // Again, from a second call and from a second Jit object.
  auto [u3, u4, n3, n4] = f();
  EXPECT_EQ(u3.to_vector<float>(), u1.to_vector<float>());
  EXPECT_EQ(n3.to_vector<float>(), n1.to_vector<float>());
  auto g = jit([]() { return fx::random::uniform(fx::random::key(42), {1000}); });
  EXPECT_EQ(g().to_vector<float>(), u1.to_vector<float>());
  // Not constant.
  std::set<double> distinct_values;
  for (double v : u1.to_doubles()) distinct_values.insert(v);
  EXPECT_GT(distinct_values.size(), 990u);
}

TEST_P(Random, DifferentKeysDiffer) {
  auto f = jit([]() {
    return std::make_tuple(fx::random::uniform(fx::random::key(1), {1000}),
                           fx::random::uniform(fx::random::key(2), {1000}),
                           fx::random::uniform(fx::random::key(uint64_t{1} << 32), {1000}),
                           fx::random::normal(fx::random::key(1), {1000}),
                           fx::random::normal(fx::random::key(2), {1000}));
  });
  auto [a, b, c, na, nb] = f();
  EXPECT_LT(count_equal(a.to_doubles(), b.to_doubles()), 5);
  EXPECT_LT(count_equal(a.to_doubles(), c.to_doubles()), 5);  // the high word of the seed matters
  EXPECT_LT(count_equal(na.to_doubles(), nb.to_doubles()), 5);
}

TEST_P(Random, FoldInDiffersPerIndex) {
  constexpr int kN = 16;
  auto f = jit([]() {
    fx::Tensor k = fx::random::key(7);
    std::vector<Tensor> out{fx::random::uniform(k, {64})};
    for (int i = 0; i < kN; ++i) out.push_back(fx::random::uniform(fx::random::fold_in(k, i), {64}));
    return out;
  });
  std::vector<Array> r = f();
  ASSERT_EQ(r.size(), static_cast<size_t>(kN + 1));
  for (size_t i = 0; i < r.size(); ++i) {
    for (size_t j = i + 1; j < r.size(); ++j) {
      EXPECT_LT(count_equal(r[i].to_doubles(), r[j].to_doubles()), 3) << "draws " << i << " and " << j;
    }
  }
  // fold_in with a Tensor index (as in a loop) equals fold_in with the integer.
  auto g = jit([](Tensor i) {
    fx::Tensor k = fx::random::key(7);
    return std::make_pair(fx::random::fold_in(k, i), fx::random::fold_in(k, 5));
  });
  auto [k1, k2] = g(Array::scalar(int32_t{5}));
  EXPECT_EQ(k1.dtype(), fx::i32);
  EXPECT_EQ(k1.shape(), Shape{2});
  EXPECT_EQ(k1.to_vector<int32_t>(), k2.to_vector<int32_t>());
  // Folding different data into a key gives different keys; fold_in is deterministic.
  auto [k3, k4] = g(Array::scalar(int32_t{6}));
  EXPECT_NE(k3.to_vector<int32_t>(), k4.to_vector<int32_t>());
  EXPECT_EQ(k4.to_vector<int32_t>(), k2.to_vector<int32_t>());
}

// The streams documented in docs/ir.md ("Random numbers"), computed here from Philox.
TEST_P(Random, StreamsMatchTheDocumentedPhilox) {
  FLUXION_REQUIRE_F64(backend());
  const uint64_t seed = 0x123456789abcdefULL;
  auto f = jit([seed]() {
    fx::Tensor k = fx::random::key(seed);
    return std::make_tuple(k, fx::random::uniform(k, {2, 50}), fx::random::uniform(k, {100}, fx::f64),
                           fx::random::normal(k, {100}, fx::f64), fx::random::normal(k, {100}),
                           fx::random::fold_in(k, 3), fx::random::uniform(fx::random::fold_in(k, 3), {10}));
  });
  auto [key, uf, ud, nd, nf, folded, uf_folded] = f();
  auto kw = key_words(seed);
  EXPECT_ARRAY(key, fx::i32, {2}, {static_cast<double>(static_cast<int32_t>(kw[0])),
                                   static_cast<double>(static_cast<int32_t>(kw[1]))});
  std::vector<double> wuf, wud, wnd, wnf;
  for (uint64_t i = 0; i < 100; ++i) {
    wuf.push_back(uniform_f32_ref(kw, i));
    wud.push_back(uniform_f64_ref(kw, i));
    wnd.push_back(normal_ref(kw, i));
    wnf.push_back(round_to(fx::f32, normal_ref(kw, i)));
  }
  EXPECT_ARRAY(uf, fx::f32, {2, 50}, wuf);
  EXPECT_ARRAY(ud, fx::f64, {100}, wud);
  EXPECT_ARRAY(nd, fx::f64, {100}, wnd, Tol::trans());
  // An f32 Box-Muller may be evaluated in f32 on a device: u1 = (w0 + 1) * 2^-32 rounded to
  // float loses the low bits of 1 - u1, and sqrt(-2 ln u1) magnifies that when u1 is near 1.
  EXPECT_ARRAY(nf, fx::f32, {100}, wnf, Tol::loose(1e-3));
  auto fk = fold_ref(kw, 3);
  EXPECT_ARRAY(folded, fx::i32, {2}, {static_cast<double>(static_cast<int32_t>(fk[0])),
                                      static_cast<double>(static_cast<int32_t>(fk[1]))});
  std::vector<double> wfold;
  for (uint64_t i = 0; i < 10; ++i) wfold.push_back(uniform_f32_ref(fk, i));
  EXPECT_ARRAY(uf_folded, fx::f32, {10}, wfold);
}

TEST_P(Random, UniformRangeAndMoments) {
  FLUXION_REQUIRE_F64(backend());
  constexpr int64_t kN = 100000;
  auto f = jit([]() {
    fx::Tensor k = fx::random::key(2024);
    return std::make_tuple(fx::random::uniform(k, {kN}), fx::random::uniform(fx::random::fold_in(k, 1), {kN}, fx::f64),
                           fx::random::uniform(fx::random::fold_in(k, 2), {100, 1000}, fx::f32, -2, 3));
  });
  auto [u, ud, ur] = f();
  for (const Array* a : {&u, &ud}) {
    Stats s = stats(a->to_doubles());
    EXPECT_GE(s.lo, 0.0);
    EXPECT_LT(s.hi, 1.0);
    EXPECT_NEAR(s.mean, 0.5, 0.01);
    EXPECT_NEAR(s.var, 1.0 / 12, 0.005);
    EXPECT_LT(s.lo, 0.001);  // covers the whole range
    EXPECT_GT(s.hi, 0.999);
  }
  EXPECT_EQ(ud.dtype(), fx::f64);
  ASSERT_EQ(ur.shape(), (Shape{100, 1000}));
  Stats s = stats(ur.to_doubles());
  EXPECT_GE(s.lo, -2.0);
  EXPECT_LT(s.hi, 3.0);
  EXPECT_NEAR(s.mean, 0.5, 0.05);
  EXPECT_NEAR(s.var, 25.0 / 12, 0.05);
  // Each tenth of [0, 1) holds about a tenth of the draws.
  std::vector<int> bins(10, 0);
  for (double v : u.to_doubles()) ++bins[static_cast<size_t>(std::min(9.0, v * 10))];
  for (int b : bins) EXPECT_NEAR(b, kN / 10, 600);
}

TEST_P(Random, NormalMoments) {
  FLUXION_REQUIRE_F64(backend());
  constexpr int64_t kN = 100000;
  auto f = jit([]() {
    fx::Tensor k = fx::random::key(99);
    return std::make_tuple(fx::random::normal(k, {kN}), fx::random::normal(fx::random::fold_in(k, 1), {kN}, fx::f64),
                           fx::random::normal(fx::random::fold_in(k, 2), {kN}, fx::f32, 3, 2));
  });
  auto [n, nd, ns] = f();
  for (const Array* a : {&n, &nd}) {
    Stats s = stats(a->to_doubles());
    EXPECT_NEAR(s.mean, 0, 0.02);
    EXPECT_NEAR(std::sqrt(s.var), 1, 0.02);
    EXPECT_LT(s.lo, -3.5);
    EXPECT_GT(s.hi, 3.5);
    // About 68.3% within one standard deviation.
    int within = 0;
    for (double v : a->to_doubles()) within += std::abs(v) < 1;
    EXPECT_NEAR(static_cast<double>(within) / kN, 0.6827, 0.01);
  }
  Stats s = stats(ns.to_doubles());
  EXPECT_NEAR(s.mean, 3, 0.04);
  EXPECT_NEAR(std::sqrt(s.var), 2, 0.04);
}

// ---- Multiple outputs and retracing.

class Outputs : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Outputs);

TEST_P(Outputs, TupleVectorAndPair) {
  FLUXION_REQUIRE_F64(backend());
  Array x = make(fx::f32, {1, 2, 3}, {3}), y = make(fx::f32, {4, 5, 6}, {3});
  auto f = jit([](Tensor a, Tensor b) { return std::make_tuple(a + b, a * b, fx::sum(a), fx::argmax(b, 0)); });
  auto [s, p, t, am] = f(x, y);
  EXPECT_ARRAY(s, fx::f32, {3}, {5, 7, 9});
  EXPECT_ARRAY(p, fx::f32, {3}, {4, 10, 18});
  EXPECT_ARRAY(t, fx::f32, {}, {6});
  EXPECT_ARRAY(am, fx::i32, {}, {2});
  // A vector whose length depends on the input shape.
  auto g = jit([](Tensor a) {
    std::vector<Tensor> rows;
    for (int64_t i = 0; i < a.dim(0); ++i) rows.push_back(fx::squeeze(fx::slice_axis(a, 0, i, i + 1), 0) * 10.0);
    return rows;
  });
  std::vector<Array> rows = g(make(fx::f64, {1, 2, 3, 4, 5, 6}, {3, 2}));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_ARRAY(rows[0], fx::f64, {2}, {10, 20});
  EXPECT_ARRAY(rows[1], fx::f64, {2}, {30, 40});
  EXPECT_ARRAY(rows[2], fx::f64, {2}, {50, 60});
  // Nested: a pair of a tensor and a vector; vector inputs.
  auto h = jit([](std::vector<Tensor> xs) {
    return std::make_pair(xs[0] - xs[1], std::vector<Tensor>{fx::max(xs[0]), fx::min(xs[1])});
  });
  auto [d, mm] = h(std::vector<Array>{x, y});
  EXPECT_ARRAY(d, fx::f32, {3}, {-3, -3, -3});
  ASSERT_EQ(mm.size(), 2u);
  EXPECT_ARRAY(mm[0], fx::f32, {}, {3});
  EXPECT_ARRAY(mm[1], fx::f32, {}, {4});
  // The same input returned twice and an input returned unchanged.
  auto k = jit([](Tensor a) { return std::make_tuple(a, a * 2.0, a * 2.0); });
  auto [k0, k1, k2] = k(x);
  EXPECT_ARRAY(k0, fx::f32, {3}, {1, 2, 3});
  EXPECT_ARRAY(k1, fx::f32, {3}, {2, 4, 6});
  EXPECT_ARRAY(k2, fx::f32, {3}, {2, 4, 6});
}

TEST_P(Outputs, NewShapesRetraceAndStayCorrect) {
  FLUXION_REQUIRE_F64(backend());
  int traces = 0;
  auto f = jit([&traces](Tensor a, Tensor b) {
    ++traces;
    return fx::sum(a * b, -1) + 1.0;
  });
  struct Call {
    DType dt;
    Shape sa, sb;
  };
  std::vector<Call> calls{{fx::f32, {3}, {3}},       {fx::f32, {2, 3}, {3}},    {fx::f32, {2, 3}, {1, 3}},
                          {fx::f64, {2, 2}, {2, 2}}, {fx::i32, {4}, {4}},       {fx::f32, {3}, {3}},
                          {fx::f32, {0, 3}, {3}},    {fx::f32, {2, 3}, {3}}};
  const size_t expected_cache[] = {1, 2, 3, 4, 5, 5, 6, 6};
  uint32_t seed = 70;
  for (size_t c = 0; c < calls.size(); ++c) {
    const Call& call = calls[c];
    SCOPED_TRACE("call " + std::to_string(c) + " " + fx::dtype_name(call.dt) + str(call.sa) + str(call.sb));
    std::vector<double> a = random_values(call.dt, count(call.sa), -3, 3, seed++);
    std::vector<double> b = random_values(call.dt, count(call.sb), -3, 3, seed++);
    Shape s = broadcast_shape(call.sa, call.sb);
    std::vector<double> ab = broadcast_values(a, call.sa, s), bb = broadcast_values(b, call.sb, s);
    Shape os(s.begin(), s.end() - 1);
    int64_t n = s.back();
    std::vector<double> want;
    for (int64_t i = 0; i < count(os); ++i) {
      double acc = 0;
      for (int64_t j = 0; j < n; ++j) acc += ab[static_cast<size_t>(i * n + j)] * bb[static_cast<size_t>(i * n + j)];
      want.push_back(round_to(call.dt, acc + 1));
    }
    EXPECT_ARRAY(f(make(call.dt, a, call.sa), make(call.dt, b, call.sb)), call.dt, os, want, Tol::sum(4, 9));
    EXPECT_EQ(f.cache_size(), expected_cache[c]);
  }
  EXPECT_EQ(traces, 6);
}
