// What must not happen in a differentiated program, checked on its IR: adjoints nobody asked
// for (activity analysis) and full-size zero-padded adjoints of slices (fan-out).
#include "autodiff/gradcheck.h"
#include "common/test_names.h"

namespace {

int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

// Whether some op of the IR produces a value of type `t` (printed as ": f32[16,32]").
bool produces(const std::string& ir, const fx::TensorType& t) { return ir.find(": " + t.str() + "\n") != std::string::npos; }

}  // namespace

TEST(Activity, W5ComputesNoAdjointOfTheData) {
  // loss = sum(exp(W x + b)) with respect to W and b only (workload W5, smaller).
  auto loss = [](Tensor W, Tensor b, Tensor x) { return fx::sum(fx::exp(fx::matmul(W, x) + b)); };
  Array W = uniform64({8, 16}, -0.1, 0.1, 1), b = uniform64({8, 1}, -0.1, 0.1, 2), x = uniform64({16, 32}, -0.1, 0.1, 3);
  std::string ir = fx::jit(fx::value_and_grad(loss, {0, 1})).lower(W, b, x).ir();
  EXPECT_EQ(count(ir, " = matmul "), 2) << "the forward matmul and the one for dW only:\n" << ir;
  EXPECT_FALSE(produces(ir, x.type())) << "an adjoint of x was computed:\n" << ir;
  // And the gradients are right.
  expect_gradients_match(fx::Backend::Interp, [&](Tensor W, Tensor b) { return loss(W, b, fx::constant(x)); }, W, b);
}

TEST(Activity, W3NeverComputesTheAdjointOfTheData) {
  auto loss = [](Tensor W1, Tensor b1, Tensor W2, Tensor b2, Tensor x) {
    Tensor h = fx::tanh(fx::matmul(W1, x) + b1);
    Tensor y = fx::matmul(W2, h) + b2;
    return fx::sum(y * y);
  };
  Array x(fx::DType::f32, {20, 8});
  std::string ir = fx::jit(fx::value_and_grad(loss, {0, 1, 2, 3}))
                       .lower(Array(fx::DType::f32, {6, 20}), Array(fx::DType::f32, {6, 1}), Array(fx::DType::f32, {3, 6}),
                              Array(fx::DType::f32, {3, 1}), x)
                       .ir();
  EXPECT_FALSE(produces(ir, x.type())) << ir;
  EXPECT_EQ(count(ir, " = matmul "), 5) << "2 forward, dW2, dh, dW1:\n" << ir;
}

TEST(Activity, ValuesThatDoNotDependOnWrtGetNoAdjoint) {
  // The exp(x) branch is constant with respect to w: its derivative must not be formed.
  auto loss = [](Tensor w, Tensor x) { return fx::sum(w * fx::exp(x) + fx::sin(x)); };
  std::string ir = fx::jit(fx::grad(loss, {0})).lower(Array(fx::DType::f32, {4}), Array(fx::DType::f32, {4})).ir();
  EXPECT_EQ(count(ir, " = cos "), 0) << "sin's adjoint was formed:\n" << ir;
  EXPECT_EQ(count(ir, " = exp "), 1) << ir;
}

TEST(FanOut, GateSlicesShareOneAdjointBufferWrittenByParts) {
  // An LSTM cell: one matmul gives all four gates, which are sliced apart (seed 001).
  auto cell = [](Tensor W, Tensor h0, Tensor c0) {
    Tensor gates = fx::matmul(W, h0);  // [4H, B]
    int64_t H = c0.dim(0);
    Tensor i = fx::sigmoid(fx::slice_axis(gates, 0, 0, H));
    Tensor f = fx::sigmoid(fx::slice_axis(gates, 0, H, 2 * H));
    Tensor g = fx::tanh(fx::slice_axis(gates, 0, 2 * H, 3 * H));
    Tensor o = fx::sigmoid(fx::slice_axis(gates, 0, 3 * H, 4 * H));
    Tensor c = f * c0 + i * g;
    return fx::sum(o * fx::tanh(c));
  };
  Array W = uniform64({12, 5}, -0.5, 0.5, 4), h0 = uniform64({5, 2}, -1, 1, 5), c0 = uniform64({3, 2}, -1, 1, 6);
  std::string ir = fx::jit(fx::grad(cell, {0})).lower(W, h0, c0).ir();
  EXPECT_EQ(count(ir, " = pad "), 0) << "a gate's adjoint was padded to full size:\n" << ir;
  EXPECT_EQ(count(ir, " = concat "), 1) << ir;
  expect_gradients_match(fx::Backend::Interp, cell, W, h0, c0);
}

TEST(GradErrors, BadRequestsAreErrors) {
  auto expect_error = [](auto fn, const std::string& part) {
    try {
      fn();
      ADD_FAILURE() << "no error";
    } catch (const fx::Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  Array v(fx::DType::f32, {3});
  expect_error([&] { fx::jit(fx::grad([](Tensor x) { return x * 2.0; })).lower(v); }, "must return one float scalar");
  expect_error([&] { fx::jit(fx::grad([](Tensor x) { return fx::sum(fx::cast(x, fx::f32)); })).lower(Array(fx::DType::i32, {3})); },
               "only float arguments");
  expect_error([&] { fx::jit(fx::grad([](Tensor x) { return fx::sum(x); }, {1})).lower(v); }, "wrt index 1 is out of range");
  expect_error([&] {
    fx::jit(fx::grad([](Tensor x) {
      return fx::while_loop([](Tensor s) { return s < 10.0; }, [](Tensor s) { return s * s; }, fx::sum(x));
    })).lower(Array(fx::DType::f32, {3}));
  }, "op 'while': reverse-mode differentiation of a while_loop needs a max_iters bound");
}
