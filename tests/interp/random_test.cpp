// Philox-4x32-10 against the published Random123 known-answer vectors, and the rng ops' bit
// recipes (docs/ir.md), ranges, moments and determinism.
#include <climits>
#include <cmath>
#include <numbers>

#include "interp/program_builder.h"
#include "runtime/philox.h"

using namespace interp_test;
namespace philox = fluxion::runtime::philox;

namespace {

// rng_uniform / rng_normal of `type` from `key`.
Array draw(Op o, const Array& key, TensorType type) { return run_op(o, {key}, {}, {std::move(type)}); }

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

}  // namespace

TEST(InterpRandom, PhiloxKnownAnswers) {
  // Random123's kat_vectors for philox4x32_10.
  EXPECT_EQ(philox::philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (philox::Counter{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox::philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}),
            (philox::Counter{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox::philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}),
            (philox::Counter{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(InterpRandom, UniformFollowsTheBitRecipe) {
  Array key = i32({-1, 42});  // words 0xffffffff, 42
  philox::Key k{0xffffffffu, 42u};
  Array u32 = draw(Op::RngUniform, key, {DType::f32, {3, 4}});
  Array u64 = draw(Op::RngUniform, key, {DType::f64, {12}});
  std::vector<float> got32 = u32.to_vector<float>();
  std::vector<double> got64 = u64.to_vector<double>();
  for (uint32_t i = 0; i < 12; ++i) {
    philox::Counter w = philox::philox4x32_10({i, 0, 0, 0}, k);
    EXPECT_EQ(got32[i], static_cast<float>(static_cast<double>(w[0] >> 8) * 0x1p-24)) << i;
    EXPECT_EQ(got64[i], static_cast<double>(((static_cast<uint64_t>(w[0]) << 32) | w[1]) >> 11) * 0x1p-53) << i;
  }
  // The counter is the row-major flat index, whatever the shape.
  EXPECT_EQ(draw(Op::RngUniform, key, {DType::f32, {12}}).to_vector<float>(), got32);
}

TEST(InterpRandom, NormalFollowsTheBitRecipe) {
  Array key = i32({7, INT_MIN});
  philox::Key k{7u, 0x80000000u};
  std::vector<double> got = draw(Op::RngNormal, key, {DType::f64, {5}}).to_vector<double>();
  std::vector<float> got32 = draw(Op::RngNormal, key, {DType::f32, {5}}).to_vector<float>();
  for (uint32_t i = 0; i < 5; ++i) {
    philox::Counter w = philox::philox4x32_10({i, 0, 0, 0}, k);
    double u1 = (static_cast<double>(w[0]) + 1.0) * 0x1p-32, u2 = static_cast<double>(w[1]) * 0x1p-32;
    double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
    EXPECT_EQ(got[i], z) << i;
    EXPECT_EQ(got32[i], static_cast<float>(z)) << i;
  }
}

TEST(InterpRandom, UniformRangeMeanAndDeterminism) {
  const int64_t n = 20000;
  Array key = i32({1, 2});
  for (DType t : {DType::f32, DType::f64}) {
    std::vector<double> u = draw(Op::RngUniform, key, {t, {n}}).to_doubles();
    for (double x : u) {
      ASSERT_GE(x, 0.0);
      ASSERT_LT(x, 1.0);
    }
    EXPECT_NEAR(mean(u), 0.5, 0.01);  // standard error 0.002
    std::vector<double> again = draw(Op::RngUniform, key, {t, {n}}).to_doubles();
    EXPECT_EQ(u, again) << "same key, same draw";
    std::vector<double> other = draw(Op::RngUniform, i32({1, 3}), {t, {n}}).to_doubles();
    int same = 0;
    for (int64_t i = 0; i < n; ++i) same += u[static_cast<size_t>(i)] == other[static_cast<size_t>(i)];
    EXPECT_LT(same, 10) << "another key gives another draw";
  }
}

TEST(InterpRandom, NormalMoments) {
  const int64_t n = 20000;
  std::vector<double> z = draw(Op::RngNormal, i32({3, 4}), {DType::f64, {n}}).to_doubles();
  double m = mean(z), var = 0;
  for (double x : z) {
    ASSERT_TRUE(std::isfinite(x));
    var += (x - m) * (x - m);
  }
  var /= static_cast<double>(n - 1);
  EXPECT_NEAR(m, 0.0, 0.03);  // standard error 0.007
  EXPECT_NEAR(var, 1.0, 0.05);
}

TEST(InterpRandom, FoldDerivesANewKey) {
  Array key = i32({5, -6});
  philox::Key k{5u, static_cast<uint32_t>(-6)};
  for (int32_t data : {0, 1, -1}) {
    Array folded = run_op(Op::RngFold, {key, Array::scalar(data)});
    EXPECT_EQ(folded.type(), (TensorType{DType::i32, {2}}));
    philox::Counter w = philox::philox4x32_10({static_cast<uint32_t>(data), 0, 1, 0}, k);
    EXPECT_EQ(folded.to_vector<int32_t>(),
              (std::vector<int32_t>{static_cast<int32_t>(w[0]), static_cast<int32_t>(w[1])}))
        << data;
  }
  EXPECT_NE(run_op(Op::RngFold, {key, Array::scalar(int32_t{0})}).to_vector<int32_t>(),
            run_op(Op::RngFold, {key, Array::scalar(int32_t{1})}).to_vector<int32_t>());
}
