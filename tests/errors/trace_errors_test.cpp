// Every bad-input path of the public API raises fluxion::Error at trace time (or call time for
// run-time checks) with a message naming the op, the operand types, what was expected and the
// caller's source location. Nothing aborts.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include <fluxion/fluxion.h>

namespace fx = fluxion;

namespace {

// Runs `fn`, requires an fx::Error whose message contains every string of `parts`.
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
  } catch (const fx::Error& e) {
    std::string msg = e.what();
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "missing '" << p << "' in: " << msg;
    return;
  }
  ADD_FAILURE() << "no fluxion::Error raised";
}

fx::Array f32(fx::Shape s) { return fx::Array(fx::DType::f32, std::move(s)); }
fx::Array i32(fx::Shape s) { return fx::Array(fx::DType::i32, std::move(s)); }

// Traces f on inputs of the given arrays (tracing is where shape errors surface).
template <class F, class... A>
void trace(F f, const A&... a) {
  fx::jit(f, fx::Backend::Interp).lower(a...);
}

const std::string kFile = "trace_errors_test.cpp:";

}  // namespace

TEST(TraceErrors, NonBroadcastableShapesNameOpShapesAndLine) {
  expect_error([] { trace([](fx::Tensor a, fx::Tensor b) { return a + b; }, f32({3}), f32({4})); },
               {"op 'add'", "f32[3]", "f32[4]", "not broadcastable", "equal dimensions or 1", kFile});
  // The location is the user's line (where the operator is written), not one in the library.
  int line = 0;
  std::string msg;
  try {
    trace([&](fx::Tensor a, fx::Tensor b) { line = __LINE__; return a * b; }, f32({2, 3}), f32({3, 2}));
  } catch (const fx::Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find(kFile + std::to_string(line) + ")"), std::string::npos) << msg;
}

TEST(TraceErrors, DtypeMismatch) {
  expect_error([] { trace([](fx::Tensor a, fx::Tensor b) { return a - b; }, f32({3}), i32({3})); },
               {"op 'sub'", "f32[3]", "i32[3]", "different dtypes", kFile});
  expect_error([] { trace([](fx::Tensor a, fx::Tensor b) { return fx::matmul(a, b); }, f32({2, 2}), i32({2, 2})); },
               {"op 'matmul'", "different dtypes"});
}

TEST(TraceErrors, FloatOnlyOpOnIntegers) {
  expect_error([] { trace([](fx::Tensor a) { return fx::exp(a); }, i32({3})); },
               {"op 'exp'", "i32[3]", "expected a float dtype", kFile});
  expect_error([] { trace([](fx::Tensor a) { return fx::mean(a); }, i32({3})); }, {"op 'mean'", "float dtype"});
  expect_error([] { trace([](fx::Tensor a) { return fx::logical_not(a); }, f32({3})); }, {"op 'not'", "bool"});
}

TEST(TraceErrors, ScalarNotRepresentable) {
  expect_error([] { trace([](fx::Tensor a) { return a + 1.5; }, i32({3})); },
               {"op 'add'", "i32[3]", "integral", kFile});
  expect_error([] { trace([](fx::Tensor a) { return a + fx::full({3}, 0.5, fx::DType::i32); }, i32({3})); },
               {"op 'constant'", "not an i32"});
}

TEST(TraceErrors, AxisOutOfRange) {
  expect_error([] { trace([](fx::Tensor a) { return fx::sum(a, 2); }, f32({2, 3})); },
               {"op 'reduce_sum'", "axis 2 is out of range for rank 2", kFile});
  expect_error([] { trace([](fx::Tensor a) { return fx::sum(a, {0, -2}); }, f32({2, 3})); }, {"twice"});
  expect_error([] { trace([](fx::Tensor a) { return fx::argmax(a, -3); }, f32({2, 3})); }, {"op 'argmax'", "-3"});
  expect_error([] { trace([](fx::Tensor a) { return fx::argmax(a, 1); }, f32({2, 0})); }, {"empty axis"});
  expect_error([] { trace([](fx::Tensor a) { return fx::concat({a, a}, 2); }, f32({2, 3})); }, {"op 'concat'", "axis 2"});
  expect_error([] { trace([](fx::Tensor a) { return fx::squeeze(a, 1); }, f32({2, 3})); }, {"op 'squeeze'", "expected 1"});
  expect_error([] { trace([](fx::Tensor a) { return fx::permute(a, {0, 0}); }, f32({2, 3})); },
               {"op 'transpose'", "not a permutation"});
  expect_error([] { trace([](fx::Tensor a) { return a * static_cast<double>(a.dim(5)); }, f32({2})); },
               {"op 'dim'", "axis 5"});
}

TEST(TraceErrors, ImpossibleReshape) {
  expect_error([] { trace([](fx::Tensor a) { return fx::reshape(a, {4}); }, f32({2, 3})); },
               {"op 'reshape'", "f32[2,3]", "[4]", kFile});
  expect_error([] { trace([](fx::Tensor a) { return fx::reshape(a, {-1, 4}); }, f32({2, 3})); }, {"cannot be inferred"});
  expect_error([] { trace([](fx::Tensor a) { return fx::reshape(a, {-1, -1}); }, f32({2, 3})); }, {"at most one -1"});
  expect_error([] { trace([](fx::Tensor a) { return fx::broadcast_to(a, {3, 2}); }, f32({2, 3})); },
               {"op 'broadcast'", "cannot broadcast to f32[3,2]"});
}

TEST(TraceErrors, MatmulAndConvShapes) {
  expect_error([] { trace([](fx::Tensor a, fx::Tensor b) { return fx::matmul(a, b); }, f32({2, 3}), f32({4, 5})); },
               {"op 'matmul'", "f32[2,3]", "f32[4,5]", "[..., k, n]"});
  expect_error([] { trace([](fx::Tensor a, fx::Tensor b) { return fx::dot(a, b); }, f32({3}), f32({4})); },
               {"op 'dot'", "equal length"});
  expect_error([] { trace([](fx::Tensor x, fx::Tensor w) { return fx::conv2d(x, w); }, f32({1, 3, 8, 8}), f32({4, 2, 3, 3})); },
               {"op 'conv2d'", "input channels per group"});
  expect_error(
      [] { trace([](fx::Tensor x, fx::Tensor w) { return fx::conv2d(x, w, {.groups = 2}); }, f32({1, 3, 8, 8}), f32({4, 1, 3, 3})); },
      {"groups=2"});
  expect_error([] { trace([](fx::Tensor x, fx::Tensor w) { return fx::conv2d(x, w); }, f32({1, 1, 2, 2}), f32({1, 1, 3, 3})); },
               {"larger than the padded input"});
  expect_error([] { trace([](fx::Tensor x) { return fx::max_pool2d(x, {.window = {3, 3}}); }, f32({1, 1, 2, 2})); },
               {"op 'max_pool2d'", "larger than the padded input"});
  expect_error([] { trace([](fx::Tensor x) { return fx::avg_pool2d(x, {.window = {2, 2}, .padding = {2}}); }, f32({1, 1, 4, 4})); },
               {"smaller than the window"});
  expect_error([] { trace([](fx::Tensor x, fx::Tensor w) { return fx::conv2d(x, w, {.stride = {1, 2, 3}}); }, f32({1, 1, 4, 4}), f32({1, 1, 3, 3})); },
               {"stride", "1 or 2 values"});
}

TEST(TraceErrors, IndexingAndMovement) {
  expect_error([] { trace([](fx::Tensor a, fx::Tensor i) { return fx::gather(a, i, 1); }, f32({2, 3}), f32({2})); },
               {"op 'gather'", "indices must be i32"});
  expect_error([] { trace([](fx::Tensor a, fx::Tensor i) { return fx::gather(a, i, 1); }, f32({2, 3}), i32({3, 1})); },
               {"op 'gather'", "every dimension but the axis"});
  expect_error([] { trace([](fx::Tensor a) { return fx::one_hot(a, 3); }, f32({2})); }, {"op 'one_hot'", "i32"});
  expect_error([] { trace([](fx::Tensor a) { return fx::slice(a, {0}, {2}, {0}); }, f32({3})); }, {"op 'slice'", "step 0"});
  expect_error([] { trace([](fx::Tensor a, fx::Tensor b) { return fx::concat({a, b}); }, f32({2, 3}), f32({2, 4})); },
               {"op 'concat'", "every dimension but the axis"});
  expect_error([] { trace([](fx::Tensor a, fx::Tensor b) { return fx::stack({a, b}); }, f32({2}), f32({3})); },
               {"op 'stack'", "equal shapes"});
  expect_error([] { trace([](fx::Tensor c, fx::Tensor a) { return fx::where(c, a, a); }, f32({2}), f32({2})); },
               {"op 'select'", "must be a bool"});
  expect_error([] { trace([](fx::Tensor a) { return fx::random::uniform(a, {2}); }, f32({2})); },
               {"op 'rng_uniform'", "i32[2]"});
  expect_error([] { trace([](fx::Tensor a) { return a + fx::zeros({2, -1}); }, f32({2})); }, {"negative dimension"});
}

TEST(TraceErrors, ScatterAdd) {
  auto fails = [](const fx::Array& u, const fx::Array& i, int64_t dim, int64_t axis, std::vector<std::string> parts) {
    auto f = [dim, axis](fx::Tensor x, fx::Tensor idx) { return fx::scatter_add(x, idx, dim, axis); };
    parts.push_back("op 'scatter_add'");
    expect_error([&] { trace(f, u, i); }, parts);
  };
  fails(f32({3, 2}), f32({3}), 4, 0, {"indices must be i32", "updates f32[3,2], indices f32[3]", kFile});
  fails(fx::Array(fx::DType::boolean, {3}), i32({3}), 4, 0, {"numeric dtype", "bool[3]"});
  fails(f32({3, 2}), i32({4}), 4, 0, {"the indices' shape [4] at axis 0, not [3]", "f32[3,2]", "i32[4]"});
  fails(f32({2, 3}), i32({2}), 4, 1, {"at axis 1, not [3]"});
  fails(f32({3}), i32({3, 1}), 4, 0, {"at least the indices' rank"});
  fails(f32({3}), i32({3}), 0, 0, {"dim 0 must be > 0"});
  fails(f32({3}), i32({3}), -2, 0, {"dim -2"});
  fails(f32({3, 2}), i32({3}), 4, 2, {"axis 2 is out of range for rank 2"});
}

TEST(TraceErrors, TensorMisuse) {
  expect_error([] { fx::zeros({2}); }, {"no trace is active"});
  fx::Tensor escaped;
  fx::jit([&](fx::Tensor a) { escaped = a * 2.0; return a; }).lower(f32({2}));
  expect_error([&] { trace([&](fx::Tensor a) { return a + escaped; }, f32({2})); }, {"outside the trace that created it"});
  expect_error([] { trace([](fx::Tensor a) { return a + fx::Tensor(); }, f32({2})); }, {"empty Tensor"});
}

TEST(TraceErrors, ControlFlowTypes) {
  // A loop body that changes the shape of its carry.
  expect_error([] {
    trace([](fx::Tensor a) { return fx::fori_loop(0, 3, [](fx::Tensor, fx::Tensor c) { return fx::concat({c, c}); }, a); },
          f32({2}));
  }, {"op 'scan'", "carries", kFile});
  expect_error([] {
    trace([](fx::Tensor a) {
      return fx::while_loop([](fx::Tensor c) { return fx::sum(c); }, [](fx::Tensor c) { return c; }, a);
    }, f32({2}));
  }, {"op 'while'", "bool[]"});
  expect_error([] {
    trace([](fx::Tensor p, fx::Tensor a) {
      return fx::cond(p, [&] { return a; }, [&] { return fx::sum(a); });
    }, fx::Array::scalar(true), f32({2}));
  }, {"op 'cond'", "then returns (f32[2]) but else returns (f32[])"});
  expect_error([] {
    trace([](fx::Tensor p) { return fx::cond(p, [&] { return p; }, [&] { return p; }); }, f32({}));
  }, {"op 'cond'", "bool scalar"});
  expect_error([] {
    trace([](fx::Tensor a, fx::Tensor xs) {
      auto body = [](fx::Tensor c, const std::vector<fx::Tensor>& x) { return std::make_pair(c + x[0], c); };
      return fx::scan(body, a, std::vector<fx::Tensor>{xs, fx::zeros({5})}).first;
    }, f32({}), f32({4}));
  }, {"op 'scan'", "leading dimension 4"});
}

TEST(CallErrors, WrongArgumentsAtCallTime) {
  fx::Compiled c = fx::jit([](fx::Tensor a, fx::Tensor b) { return a + b; }).lower(f32({2}), f32({2}));
  expect_error([&] { c.run({f32({2})}); }, {"takes 2 input(s) (f32[2], f32[2]), got 1 (f32[2])"});
  expect_error([&] { c.run({f32({2}), i32({2})}); }, {"got 2 (f32[2], i32[2])"});
  expect_error([&] { c.run({f32({2}), f32({3})}); }, {"f32[3]"});
}

TEST(CallErrors, WhileLoopPastMaxIters) {
  auto f = fx::jit([](fx::Tensor n) {
    return fx::while_loop([](fx::Tensor c) { return c < 100; }, [](fx::Tensor c) { return c + 1; }, n, 10);
  });
  EXPECT_EQ(f(fx::Array::scalar(int32_t{95})).item(), 100);
  expect_error([&] { f(fx::Array::scalar(int32_t{0})); }, {"while", "max_iters=10"});
}

TEST(CallErrors, InvalidVulkanDevice) {
  // Validated when chosen, so no device is opened: runs with or without a Vulkan device.
  expect_error([] { fx::select_vulkan_device(99); }, {"select_vulkan_device asked for device index 99", "devices:"});
  expect_error([] { fx::select_vulkan_device(-1); }, {"device index -1"});
  expect_error([] { fx::select_vulkan_device("no such gpu"); }, {"a device named 'no such gpu'"});
}

TEST(ArrayErrors, BadConstruction) {
  expect_error([] { fx::Array(std::vector<float>{1, 2, 3}, {2, 2}); }, {"3 values given for shape [2,2]", "trace_errors_test.cpp"});
  expect_error([] { fx::Array(fx::DType::f32, {-1}); }, {"negative dimension"});
  expect_error([] { fx::Array(std::vector<float>{1}, {1}).to_vector<int32_t>(); }, {"asked for i32"});
  expect_error([] { fx::Array(fx::DType::f32, {2}).item(); }, {"exactly one element"});
}

TEST(TraceErrors, ShapesTooLargeToCount) {
  expect_error([] { trace([](fx::Tensor a) { return a + fx::zeros({1 << 30, 1 << 30, 1 << 30}); }, f32({1})); },
               {"op 'constant'", "more than 2^40 elements"});
  expect_error([] { trace([](fx::Tensor a) { return fx::broadcast_to(a, {int64_t{1} << 62, 4}); }, f32({1})); },
               {"op 'broadcast'", "more than 2^40 elements"});
}

TEST(CallErrors, OutOfMemoryIsAnError) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "AddressSanitizer's allocator aborts on a 512 GiB request instead of failing it";
#endif
  // 2^36 doubles do not fit in this machine's memory; the interpreter reports it. (The CPU
  // backend fuses the sum and never materializes the operand.)
  auto f = fx::jit([](fx::Tensor a) { return fx::sum(a + fx::zeros({int64_t{1} << 18, int64_t{1} << 18})); },
                   fx::Backend::Interp);
  expect_error([&] { f(f32({1})); }, {"out of memory"});
}
