// The numerics check (fluxion/runtime.h, FLUXION_CHECK_NUMERICS): a call whose results hold a
// NaN or an infinity raises Error naming the op that produced it, its source line and its
// kernel; on every backend.
#include <gtest/gtest.h>

#include "common/test_names.h"

class NumericsCheck : public BackendTest {
 protected:
  void SetUp() override { fx::set_check_numerics(true); }
  void TearDown() override { fx::set_check_numerics(false); }
  template <class F, class... A>
  std::string error_of(F f, const A&... args) {
    try {
      jit(f)(args...);
    } catch (const fx::Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
  }
};
FLUXION_INSTANTIATE_BACKENDS(NumericsCheck);

TEST_P(NumericsCheck, NamesTheOpItsLineAndItsKernel) {
  int line = __LINE__ + 1;
  auto f = [](Tensor x) { return fx::sum(fx::log(x - 1.0) * 2.0); };
  std::string m = error_of(f, make(DType::f32, {2, 0.5, 3}, {3}));
  EXPECT_NE(m.find("result 0 (f32[]) holds NaN"), std::string::npos) << m;
  EXPECT_NE(m.find("first op to produce a non-finite value is 'log'"), std::string::npos) << m;
  EXPECT_NE(m.find("numerics_check_test.cpp:" + std::to_string(line)), std::string::npos) << m;
  EXPECT_NE(m.find("element 1 is NaN"), std::string::npos) << m;
  if (backend() != Backend::Interp) {
    EXPECT_NE(m.find(", in kernel "), std::string::npos) << m;
  }
}

TEST_P(NumericsCheck, OverflowToInfinity) {
  std::string m = error_of([](Tensor x) { return fx::exp(x * 100.0); }, make(DType::f32, {0.1, 10}, {2}));
  EXPECT_NE(m.find("holds +inf at element 1"), std::string::npos) << m;
  EXPECT_NE(m.find("is 'exp'"), std::string::npos) << m;
}

TEST_P(NumericsCheck, InsideALoopBody) {
  auto f = [](Tensor x) {
    return fx::fori_loop(0, 5, [](Tensor, Tensor s) { return fx::sqrt(s - 1.5); }, x);
  };
  std::string m = error_of(f, make(DType::f32, {100}, {1}));
  EXPECT_NE(m.find("is 'sqrt'"), std::string::npos) << m;
  if (backend() != Backend::Interp) {
    EXPECT_NE(m.find("(in the body of scan)"), std::string::npos) << m;
  }
}

TEST_P(NumericsCheck, NanFromInfiniteConstantsIsAttributedToTheOpThatMadeIt) {
  // inf * 0: the NaN is produced by the mul, although an operand was already infinite. (Not
  // t - t: lavapipe folds x - x to 0 even for an infinite x.)
  std::string m = error_of([](Tensor x, Tensor y) { return (x + fx::full({2}, kInf, DType::f32)) * y; },
                           make(DType::f32, {1, 2}, {2}), make(DType::f32, {0, 1}, {2}));
  EXPECT_NE(m.find("is 'mul'"), std::string::npos) << m;
  // An infinity that only flows from a constant: no op produced it.
  std::string c = error_of([](Tensor x) { return x + fx::full({2}, kInf, DType::f32); }, make(DType::f32, {1, 2}, {2}));
  EXPECT_NE(c.find("comes from an infinite constant"), std::string::npos) << c;
}

TEST_P(NumericsCheck, NonFiniteInputsAreNamed) {
  std::string m = error_of([](Tensor x) { return x * 2.0; }, make(DType::f32, {1, kNaN}, {2}));
  EXPECT_NE(m.find("Input 0 (f32[2]) already holds NaN at element 1"), std::string::npos) << m;
}

TEST_P(NumericsCheck, FiniteResultsAndTheModeOffPass) {
  // A masked NaN leaves the results finite: nothing to report (documented).
  Array y = jit([](Tensor x) { return fx::where(x > 0.0, fx::log(x), 0.0); })(make(DType::f32, {-1, 2}, {2}));
  EXPECT_TRUE(matches(y, {2}, {0, std::log(2.0)}));
  fx::set_check_numerics(false);
  Array z = jit([](Tensor x) { return fx::log(x); })(make(DType::f32, {-1}, {1}));
  EXPECT_TRUE(std::isnan(z.to_doubles()[0]));
}

TEST_P(NumericsCheck, InPlaceCallsReplayTheInputsAsTheyWere) {
  // run_into with the output overwriting the input: the replay must see the original input.
  fx::Compiled c = jit([](Tensor x) { return fx::log(x - 1.0); }).lower(Array(fx::f32, {2}));
  Array x = make(DType::f32, {3, 0.5}, {2});
  std::vector<Array> in{x}, out{x};
  try {
    c.run_into(in, out);
    ADD_FAILURE() << "no error";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("is 'log'"), std::string::npos) << e.what();
  }
}
