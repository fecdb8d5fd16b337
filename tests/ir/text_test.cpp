// The IR's text form: golden prints, print -> parse -> print round trips over every op family
// and nested regions, and parse errors that name the line and column.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include <fluxion/fluxion.h>

#include "jit/ir/ir.h"

namespace fx = fluxion;
namespace ir = fluxion::ir;

namespace {

fx::TensorType f32(fx::Shape s) { return {fx::DType::f32, std::move(s)}; }

// A small program built directly with Region::add, with value ids deliberately not in order
// of definition (an unused type slot first), to show the printer renumbers.
ir::Program hand_built(int64_t rows = 2) {
  ir::Program p;
  p.body.new_value(f32({7}));
  ir::ValueId x = p.body.add_param(f32({rows, 3}));
  ir::ValueId b = p.body.add_param(f32({3}));
  ir::ValueId bb = p.body.add(ir::Op::Broadcast, {b}, {}, {f32({rows, 3})})[0];
  ir::ValueId s = p.body.add(ir::Op::Add, {x, bb})[0];
  ir::Attrs a;
  a.axes = {1};
  ir::ValueId r = p.body.add(ir::Op::ReduceSum, {s}, a)[0];
  ir::Attrs c;
  c.data = {0.1};
  ir::ValueId k = p.body.add(ir::Op::Constant, {}, c, {f32({rows})})[0];
  p.body.results = {p.body.add(ir::Op::Mul, {r, k})[0]};
  return p;
}

// Print -> parse -> print must give the same text and the same hash.
void expect_round_trip(const std::string& text) {
  ir::Program p = ir::parse(text);
  EXPECT_EQ(ir::print(p), text);
  ir::verify(p);
  EXPECT_EQ(ir::structural_hash(p), ir::structural_hash(ir::parse(ir::print(p))));
}

template <class F, class... A>
std::string trace_text(F f, const A&... a) {
  return fx::jit(f, fx::Backend::Interp).lower(a...).traced_ir();
}

void expect_parse_error(const std::string& text, const std::string& part) {
  try {
    ir::parse(text);
    ADD_FAILURE() << "parsed without error: " << text;
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(IrText, GoldenPrint) {
  EXPECT_EQ(ir::print(hand_built()),
            "func @main(%0: f32[2,3], %1: f32[3]) -> (f32[2]) {\n"
            "  %2 = broadcast %1 : f32[2,3]\n"
            "  %3 = add %0, %2 : f32[2,3]\n"
            "  %4 = reduce_sum %3 {axes=[1]} : f32[2]\n"
            "  %5 = constant {data=[0.1]} : f32[2]\n"
            "  %6 = mul %4, %5 : f32[2]\n"
            "  return %6\n"
            "}\n");
}

TEST(IrText, GoldenPrintOfLoopsWithCaptures) {
  std::string text = trace_text(
      [](fx::Tensor x) {
        // One op per statement: C++ leaves the order of an operator's operands unspecified.
        return fx::fori_loop(1, 4, [&](fx::Tensor i, fx::Tensor s) {
          fx::Tensor sx = s * x;
          return sx + fx::cast(i, fx::f32);
        }, x);
      },
      fx::Array(fx::DType::f32, {2}));
  EXPECT_EQ(text,
            "func @main(%0: f32[2]) -> (f32[2]) {\n"
            "  %1 = scan %0, %0 {length=3, carries=1} : f32[2]\n"
            "    body(%0: i32[], %1: f32[2], %2: f32[2]) {\n"
            "      %3 = constant {data=[1]} : i32[]\n"
            "      %4 = add %0, %3 : i32[]\n"
            "      %5 = mul %1, %2 : f32[2]\n"
            "      %6 = convert %4 : f32[]\n"
            "      %7 = broadcast %6 : f32[2]\n"
            "      %8 = add %5, %7 : f32[2]\n"
            "      yield %8\n"
            "    }\n"
            "  return %1\n"
            "}\n");
}

TEST(IrText, RoundTripsEveryOpFamily) {
  fx::Array x(fx::DType::f32, {2, 3, 4, 4}), w(fx::DType::f32, {4, 1, 3, 3}), lab(fx::DType::i32, {2});
  expect_round_trip(trace_text(
      [](fx::Tensor x, fx::Tensor w, fx::Tensor labels) {
        fx::Tensor c = fx::conv2d(fx::slice(x, {0, 0, 0, 0}, {2, 2, 4, 4}), w,
                                  {.stride = {1, 2}, .padding = {1, 0, 2, 1}, .dilation = {1, 1}, .groups = 2});
        fx::Tensor p = fx::max_pool2d(c, {.window = {2, 2}, .stride = {1, 1}, .padding = {1}}) +
                       fx::avg_pool2d(c, {.window = {2, 2}, .stride = {1, 1}, .padding = {1}});
        fx::Tensor logits = fx::reshape(p, {2, -1});
        fx::Tensor picked = fx::gather(logits, labels, 1) + fx::sum(fx::take(logits, labels, 1), 1);
        fx::Tensor v = fx::permute(fx::concat({logits, logits}, 1), {1, 0});
        fx::Tensor key = fx::random::fold_in(fx::random::key(42), labels.dim(0) > 1 ? 3 : 4);
        fx::Tensor noise = fx::random::normal(key, {2}) + fx::random::uniform(key, {2}, fx::f32, -1, 1);
        fx::Tensor mask = fx::where(picked > 0.0, fx::exp(picked), fx::log1p(fx::abs(picked)) / 3.0);
        fx::Tensor oh = fx::one_hot(fx::argmax(logits, 1), 5);
        return std::make_tuple(mask + noise, fx::max(v, 0), fx::matmul(oh, fx::ones({5, 3})), fx::cast(mask, fx::i32));
      },
      x, w, lab));
}

TEST(IrText, RoundTripsNestedRegionsAndSpecialConstants) {
  std::string text = trace_text(
      [](fx::Tensor x, fx::Tensor xs) {
        auto [c, ys] = fx::scan(
            [&](fx::Tensor c, fx::Tensor xi) {
              fx::Tensor n = fx::while_loop([&](fx::Tensor v) { return fx::sum(v) < 10.0; },
                                            [&](fx::Tensor v) { return v * 2.0 + x; }, c + xi, 50);
              fx::Tensor pick = fx::cond(fx::max(n) > 5.0, [&] { return n; }, [&] { return -n; });
              return std::make_pair(pick, fx::sum(pick));
            },
            x, xs, {.reverse = true});
        fx::Tensor special = fx::constant(fx::Array(
            std::vector<double>{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                                std::nan(""), 1e-300, -0.1, 123456789.125},
            {6}));
        return std::make_tuple(c, ys, special);
      },
      fx::Array(fx::DType::f64, {3}), fx::Array(fx::DType::f64, {5, 3}));
  EXPECT_NE(text.find("data=[inf,-inf,nan,1e-300,-0.1,123456789.125]"), std::string::npos) << text;
  EXPECT_NE(text.find("reverse=true"), std::string::npos);
  EXPECT_NE(text.find("max_iters=50"), std::string::npos);
  expect_round_trip(text);
}

TEST(IrText, LocationsArePrintedOnlyWhenAsked) {
  fx::Compiled c = fx::jit([](fx::Tensor x) { return fx::exp(x); }).lower(fx::Array(fx::DType::f32, {2}));
  EXPECT_EQ(c.traced_ir().find("text_test.cpp"), std::string::npos);
  ir::Program p = ir::parse(c.traced_ir());
  p.body.nodes[0].file = "model.cpp";
  p.body.nodes[0].line = 12;
  std::string with = ir::print(p, true);
  EXPECT_NE(with.find("  // model.cpp:12"), std::string::npos) << with;
  EXPECT_EQ(ir::print(ir::parse(with)), ir::print(p));  // comments are skipped by the parser
}

TEST(IrText, ParseErrorsNameLineAndColumn) {
  const std::string good = "func @main(%0: f32[2]) -> (f32[2]) {\n  %1 = exp %0 : f32[2]\n  return %1\n}\n";
  EXPECT_NO_THROW(ir::parse(good));
  expect_parse_error("func @main(%0: f32[2]) -> (f32[2]) {\n  %1 = expo %0 : f32[2]\n  return %1\n}\n",
                     "line 2, column 8: unknown op 'expo'");
  expect_parse_error("func @main(%0: f32[2]) -> (f32[2]) {\n  %1 = exp %5 : f32[2]\n  return %1\n}\n",
                     "line 2, column 12: %5 is not defined");
  expect_parse_error("func @main(%0: f32[2]) -> (f32[2]) {\n  %1 = exp %0 : f32[3]\n  return %1\n}\n",
                     "do not match the op's shape rule");
  expect_parse_error("func @main(%0: f32[2]) -> (f32[2]) {\n  %1 = exp %0 : f16[2]\n  return %1\n}\n",
                     "unknown dtype 'f16'");
  expect_parse_error("func @main(%0: i32[2]) -> (i32[2]) {\n  %1 = exp %0 : i32[2]\n  return %1\n}\n",
                     "expected a float dtype");
  expect_parse_error("func @main(%0: f32[2]) -> (f32[2]) {\n  %0 = exp %0 : f32[2]\n  return %0\n}\n",
                     "%0 is defined twice");
  expect_parse_error("func @main(%0: f32[2]) -> (f32[3]) {\n  return %0\n}\n", "do not match the declared result");
  expect_parse_error(good + "junk", "line 5, column 1: unexpected text");
  expect_parse_error("func @main(%0: f32[99999999999999999999]) -> () {\n}", "expected an integer");
  expect_parse_error("func @main(%0: f32[2]) -> (f32[2]) {\n  %1 = exp %0 {axes=[1} : f32[2]\n", "expected ']'");
  expect_parse_error("func @main(%0: f32[2]) -> (f32[2]) {\n  %1 = exp %0 {colour=1} : f32[2]\n",
                     "unknown attribute 'colour'");
  expect_parse_error(good.substr(0, 30), "line 1");
  expect_parse_error("", "expected a keyword");
}

TEST(IrText, DeepNestingIsAnErrorNotACrash) {
  std::string text = "func @main(%0: f32[]) -> (f32[]) {\n";
  for (int i = 0; i < 200; ++i) text += "%1 = scan %0 {length=1, carries=1} : f32[] body(%0: i32[], %1: f32[]) {\n";
  expect_parse_error(text, "nested too deeply");
}

TEST(IrVerifier, AcceptsTracedProgramsAndRejectsBrokenOnes) {
  ir::Program p = hand_built();
  EXPECT_NO_THROW(ir::verify(p));

  ir::Program use_before_def = p;
  std::swap(use_before_def.body.nodes[0], use_before_def.body.nodes[1]);
  EXPECT_THROW(ir::verify(use_before_def), fx::Error);

  ir::Program wrong_type = p;
  wrong_type.body.types[static_cast<size_t>(wrong_type.body.nodes[2].results[0])] = f32({3});
  try {
    ir::verify(wrong_type);
    ADD_FAILURE() << "verified a node with a wrong result type";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 2 (reduce_sum)"), std::string::npos) << e.what();
  }

  ir::Program twice = p;
  twice.body.nodes[1].results = twice.body.nodes[0].results;
  EXPECT_THROW(ir::verify(twice), fx::Error);

  ir::Program dangling = p;
  dangling.body.results = {100};
  EXPECT_THROW(ir::verify(dangling), fx::Error);
}

TEST(IrHash, EqualForEqualStructureDifferentIds) {
  ir::Program a = hand_built();
  ir::Program b = ir::parse(ir::print(a));  // the same program with different value ids
  EXPECT_NE(a.body.types.size(), b.body.types.size());
  EXPECT_EQ(ir::structural_hash(a), ir::structural_hash(b));
}

TEST(IrHash, ChangesWithOpShapeDtypeAttributeAndConstant) {
  const std::string base = ir::print(hand_built());
  uint64_t h = ir::structural_hash(hand_built());
  auto variant = [&](const std::string& from, const std::string& to) {
    std::string t = base;
    size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    return ir::structural_hash(ir::parse(t));
  };
  EXPECT_NE(h, variant("%6 = mul", "%6 = add"));
  EXPECT_NE(h, variant("data=[0.1]", "data=[0.10000000000000002]"));
  EXPECT_NE(h, ir::structural_hash(hand_built(3)));
  std::string f64 = base;
  for (size_t at; (at = f64.find("f32")) != std::string::npos;) f64.replace(at, 3, "f64");
  EXPECT_NE(h, ir::structural_hash(ir::parse(f64)));
}

TEST(IrText, RoundTripsDifferentiatedPrograms) {
  // Reverse mode adds the gradient ops (conv2d_input_grad, conv2d_weight_grad, pooling grads,
  // pad); their printed form must parse back too.
  auto loss = [](fx::Tensor x, fx::Tensor w) {
    fx::Tensor c = fx::relu(fx::conv2d(x, w, {.stride = {2, 1}, .padding = {1}}));
    fx::Tensor p = fx::max_pool2d(c, {.window = {2, 2}}) + fx::avg_pool2d(c, {.window = {2, 2}});
    return fx::sum(fx::slice_axis(p, 1, 0, 1, 1) * fx::tanh(p));
  };
  std::string text = fx::jit(fx::value_and_grad(loss, {0, 1}))
                         .lower(fx::Array(fx::DType::f32, {2, 3, 8, 8}), fx::Array(fx::DType::f32, {4, 3, 3, 3}))
                         .traced_ir();
  for (const char* op : {"conv2d_input_grad", "conv2d_weight_grad", "max_pool2d_grad", "avg_pool2d_grad", " pad "}) {
    EXPECT_NE(text.find(op), std::string::npos) << op;
  }
  expect_round_trip(text);
}
