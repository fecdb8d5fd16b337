// scan, while and cond on the interpreter, evaluate() on a region node, and run()'s input checks.
#include <string>

#include "interp/program_builder.h"

using namespace interp_test;

namespace {

const TensorType kF64{DType::f64, {}};
const TensorType kI32{DType::i32, {}};

// scan over xs f64[4] with carry acc f64[] and capture scale f64[]:
//   acc' = acc + x * scale + i;  ys = (acc', i)
ir::Region scan_program(bool reverse, int64_t length = 4) {
  ir::Region body;
  ValueId i = body.add_param(kI32), acc = body.add_param(kF64), x = body.add_param(kF64), scale = body.add_param(kF64);
  ValueId fi = op(body, Op::Convert, {i}, {}, {kF64});
  ValueId next = op(body, Op::Add, {op(body, Op::Add, {acc, op(body, Op::Mul, {x, scale})}), fi});
  body.results = {next, next, i};

  ir::Region r;
  ValueId acc0 = r.add_param(kF64), xs = r.add_param({DType::f64, {length}}), s = r.add_param(kF64);
  ir::Attrs a = attrs([&](ir::Attrs& at) {
    at.length = length;
    at.carries = 1;
    at.xs = 1;
    at.reverse = reverse;
  });
  std::vector<ValueId> res = ops(r, Op::Scan, {acc0, xs, s}, a, {}, {std::move(body)});
  r.results = res;
  return r;
}

// Collatz: while n != 1 { n = even(n) ? n / 2 : 3n + 1; steps += 1 }, with `one` captured.
ir::Region collatz_program(int64_t max_iters) {
  ir::Region cond;
  {
    ValueId n = cond.add_param(kI32);
    cond.add_param(kI32);
    ValueId one = cond.add_param(kI32);
    cond.results = {op(cond, Op::Ne, {n, one})};
  }
  ir::Region body;
  {
    ValueId n = body.add_param(kI32), steps = body.add_param(kI32), one = body.add_param(kI32);
    ValueId two = constant(body, kI32, {2}), three = constant(body, kI32, {3});
    ValueId half = op(body, Op::Div, {n, two});
    ValueId even = op(body, Op::Eq, {op(body, Op::Mul, {half, two}), n});
    ValueId odd_next = op(body, Op::Add, {op(body, Op::Mul, {n, three}), one});
    body.results = {op(body, Op::Select, {even, half, odd_next}), op(body, Op::Add, {steps, one})};
  }
  ir::Region r;
  ValueId n0 = r.add_param(kI32);
  ValueId steps0 = constant(r, kI32, {0}), one = constant(r, kI32, {1});
  ir::Attrs a = attrs([&](ir::Attrs& at) {
    at.carries = 2;
    at.max_iters = max_iters;
  });
  r.results = ops(r, Op::While, {n0, steps0, one}, a, {}, {std::move(cond), std::move(body)});
  return r;
}

std::vector<Array> run_region(ir::Region r, const std::vector<Array>& in) {
  std::vector<ValueId> results = r.results;
  return run(std::move(r), results, in);
}

}  // namespace

TEST(InterpControl, ScanForwardWithStackedOutputs) {
  auto out = run_region(scan_program(false), {Array::scalar(0.0), f64({1, 2, 3, 4}), Array::scalar(10.0)});
  ASSERT_EQ(out.size(), 3u);
  // t=0: 0+10+0 = 10; t=1: 10+20+1 = 31; t=2: 31+30+2 = 63; t=3: 63+40+3 = 106.
  EXPECT_EQ(out[0].item(), 106);
  EXPECT_EQ(out[1].shape(), (Shape{4}));
  expect_same(out[1].to_doubles(), {10, 31, 63, 106}, "ys");
  EXPECT_EQ(out[2].to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3}));
}

TEST(InterpControl, ScanReverseWritesYsAtT) {
  auto out = run_region(scan_program(true), {Array::scalar(0.0), f64({1, 2, 3, 4}), Array::scalar(10.0)});
  // t=3: 0+40+3 = 43; t=2: 43+30+2 = 75; t=1: 75+20+1 = 96; t=0: 96+10+0 = 106; ys[t] at t.
  EXPECT_EQ(out[0].item(), 106);
  expect_same(out[1].to_doubles(), {106, 96, 75, 43}, "ys");
  EXPECT_EQ(out[2].to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3}));
}

TEST(InterpControl, ScanOfLengthZeroReturnsItsInitialCarries) {
  auto out = run_region(scan_program(false, 0), {Array::scalar(5.0), f64({}, {0}), Array::scalar(10.0)});
  EXPECT_EQ(out[0].item(), 5);
  EXPECT_EQ(out[1].shape(), (Shape{0}));
  EXPECT_EQ(out[2].shape(), (Shape{0}));
}

TEST(InterpControl, ScanSlicesRankTwoInputs) {
  // carry f64[2] += x[t] (a row of xs f64[3,2]); ys = the carry after each step.
  TensorType row{DType::f64, {2}};
  ir::Region body;
  body.add_param(kI32);
  ValueId c = body.add_param(row), x = body.add_param(row);
  ValueId next = op(body, Op::Add, {c, x});
  body.results = {next, next};
  ir::Region r;
  ValueId c0 = r.add_param(row), xs = r.add_param({DType::f64, {3, 2}});
  ir::Attrs a = attrs([](ir::Attrs& at) {
    at.length = 3;
    at.carries = 1;
    at.xs = 1;
  });
  r.results = ops(r, Op::Scan, {c0, xs}, a, {}, {std::move(body)});
  auto out = run_region(std::move(r), {f64({0, 0}), f64({1, 2, 3, 4, 5, 6}, {3, 2})});
  expect_same(out[0].to_doubles(), {9, 12}, "final carry");
  EXPECT_EQ(out[1].shape(), (Shape{3, 2}));
  expect_same(out[1].to_doubles(), {1, 2, 4, 6, 9, 12}, "ys");
}

TEST(InterpControl, WhileExitsOnItsDataDependentCondition) {
  ir::Region r = collatz_program(-1);
  EXPECT_EQ(run_region(r, {Array::scalar(int32_t{6})})[1].item(), 8);  // 6 3 10 5 16 8 4 2 1
  auto out27 = run_region(r, {Array::scalar(int32_t{27})});
  EXPECT_EQ(out27[0].item(), 1);
  EXPECT_EQ(out27[1].item(), 111);
  EXPECT_EQ(run_region(r, {Array::scalar(int32_t{1})})[1].item(), 0);  // the body never runs
}

TEST(InterpControl, WhileMaxItersIsABoundNotAnExitCondition) {
  // 6 takes exactly 8 iterations: allowed at max_iters=8, an error at 7.
  EXPECT_EQ(run_region(collatz_program(8), {Array::scalar(int32_t{6})})[1].item(), 8);
  EXPECT_EQ(run_region(collatz_program(0), {Array::scalar(int32_t{1})})[1].item(), 0);
  try {
    run_region(collatz_program(7), {Array::scalar(int32_t{6})});
    ADD_FAILURE() << "expected an Error";
  } catch (const fluxion::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("while"), std::string::npos) << msg;
    EXPECT_NE(msg.find("exceeded max_iters=7"), std::string::npos) << msg;
  }
}

TEST(InterpControl, CondRunsTheChosenBranch) {
  TensorType v2{DType::f64, {2}};
  auto branch = [&](Op o, bool first) {
    ir::Region b;
    ValueId a = b.add_param(v2), c = b.add_param(v2);
    b.results = {op(b, o, {a, c}), first ? a : c};
    return b;
  };
  ir::Region r;
  ValueId p = r.add_param({DType::boolean, {}});
  ValueId a = r.add_param(v2), b = r.add_param(v2);
  r.results = ops(r, Op::Cond, {p, a, b}, {}, {}, {branch(Op::Add, true), branch(Op::Mul, false)});
  Array x = f64({2, 3}), y = f64({5, 7});
  auto t = run_region(r, {Array::scalar(true), x, y});
  expect_same(t[0].to_doubles(), {7, 10}, "then: a + b");
  expect_same(t[1].to_doubles(), {2, 3}, "then: a");
  auto e = run_region(r, {Array::scalar(false), x, y});
  expect_same(e[0].to_doubles(), {10, 21}, "else: a * b");
  expect_same(e[1].to_doubles(), {5, 7}, "else: b");
}

TEST(InterpControl, CondNestedInScan) {
  // acc += x[t] on even t, acc -= x[t] on odd t: 1 - 2 + 3 - 4 = -2.
  auto branch = [](Op o) {
    ir::Region b;
    ValueId acc = b.add_param(kF64), x = b.add_param(kF64);
    b.results = {op(b, o, {acc, x})};
    return b;
  };
  ir::Region body;
  ValueId i = body.add_param(kI32), acc = body.add_param(kF64), x = body.add_param(kF64);
  ValueId two = constant(body, kI32, {2});
  ValueId even = op(body, Op::Eq, {op(body, Op::Mul, {op(body, Op::Div, {i, two}), two}), i});
  body.results = {op(body, Op::Cond, {even, acc, x}, {}, {}, {branch(Op::Add), branch(Op::Sub)})};
  ir::Region r;
  ValueId acc0 = r.add_param(kF64), xs = r.add_param({DType::f64, {4}});
  ir::Attrs a = attrs([](ir::Attrs& at) {
    at.length = 4;
    at.carries = 1;
    at.xs = 1;
  });
  r.results = ops(r, Op::Scan, {acc0, xs}, a, {}, {std::move(body)});
  EXPECT_EQ(run_region(std::move(r), {Array::scalar(0.0), f64({1, 2, 3, 4})})[0].item(), -2);
}

TEST(InterpControl, EvaluateRunsARegionNode) {
  ir::Region r = scan_program(false);
  const ir::Node& scan = r.nodes.back();
  std::vector<TensorType> types;
  for (ValueId v : scan.results) types.push_back(r.type(v));
  auto out = fluxion::eval::evaluate(scan, {Array::scalar(0.0), f64({1, 2, 3, 4}), Array::scalar(10.0)}, types);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].item(), 106);
  expect_same(out[1].to_doubles(), {10, 31, 63, 106}, "ys");
}

TEST(InterpRun, InputMismatchesNameTheArgumentAndTypes) {
  ir::Region r;
  ValueId a = r.add_param({DType::f32, {3}}), b = r.add_param({DType::i32, {2, 2}});
  ir::Program p;
  p.body = r;
  p.body.results = {a, b};
  auto message = [&](const std::vector<Array>& in) -> std::string {
    try {
      fluxion::eval::run(p, in);
    } catch (const fluxion::Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  Array good_a = f32({1, 2, 3}), good_b = i32({1, 2, 3, 4}, {2, 2});
  auto out = fluxion::eval::run(p, {good_a, good_b});
  EXPECT_EQ(out[1].to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4}));
  std::string count = message({good_a});
  EXPECT_NE(count.find("2 input"), std::string::npos) << count;
  EXPECT_NE(count.find("got 1"), std::string::npos) << count;
  std::string dtype = message({good_a, f32({1, 2, 3, 4}, {2, 2})});
  EXPECT_NE(dtype.find("input 1 is f32[2,2], expected i32[2,2]"), std::string::npos) << dtype;
  std::string shape = message({f32({1, 2}), good_b});
  EXPECT_NE(shape.find("input 0 is f32[2], expected f32[3]"), std::string::npos) << shape;
}

TEST(InterpRun, OutOfMemoryIsAnError) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "AddressSanitizer's allocator aborts on a huge request instead of failing it";
#endif
  // 2^40 doubles (8 TiB): both entry points report it as an Error, not std::bad_alloc.
  TensorType huge{DType::f64, {int64_t{1} << 20, int64_t{1} << 20}};
  ir::Region r;
  ValueId c = constant(r, huge, {0});
  ValueId s = op(r, Op::ReduceSum, {c}, axes({0, 1}));
  try {
    run(r, {s}, {});
    ADD_FAILURE() << "expected an Error";
  } catch (const fluxion::Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  try {
    fluxion::eval::evaluate(r.nodes[0], {}, {huge});
    ADD_FAILURE() << "expected an Error";
  } catch (const fluxion::Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
}
