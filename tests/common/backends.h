// Shared by the test folders: parameterisation over every backend present, and comparison of
// results with a documented tolerance.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <fluxion/fluxion.h>

namespace fluxion::testing {

// Test fixtures derive from this to run once per backend in available_backends().
class BackendTest : public ::testing::TestWithParam<Backend> {
 protected:
  Backend backend() const { return GetParam(); }
};

inline std::string backend_param_name(const ::testing::TestParamInfo<Backend>& info) {
  return backend_name(info.param);
}

// Tolerance by dtype: f32 results may differ from a double-precision reference by a few ulps
// per op (rounding after each op, transcendental implementations); f64 by far less; i32 and
// bool must match exactly.
inline double tolerance(DType t, double want) {
  switch (t) {
    case DType::f32: return 1e-5 * std::abs(want) + 1e-6;
    case DType::f64: return 1e-12 * std::abs(want) + 1e-12;
    default: return 0;
  }
}

// Checks shape and every element of `got` against `want` (NaNs must match NaNs).
inline void expect_array(const Array& got, const Shape& shape, const std::vector<double>& want,
                         const std::string& what = "") {
  ASSERT_EQ(got.shape(), shape) << what;
  std::vector<double> g = got.to_doubles();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << what << " element " << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(g[i], want[i]) << what << " element " << i;
    } else {
      EXPECT_NEAR(g[i], want[i], tolerance(got.dtype(), want[i])) << what << " element " << i;
    }
  }
}

}  // namespace fluxion::testing

#define FLUXION_INSTANTIATE_BACKENDS(suite)                                            \
  INSTANTIATE_TEST_SUITE_P(Backends, suite, ::testing::ValuesIn(::fluxion::available_backends()), \
                           ::fluxion::testing::backend_param_name)
