// The parser: print -> parse -> print round trips over every op family and nested regions,
// errors that name the line, the column and what was expected, and malformed input (every
// prefix, random mutations) giving fluxion::Error rather than a crash.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include <fluxion/fluxion.h>

#include "ir/ir.h"
#include "programs.h"

using namespace ir_test;

namespace {

// Print -> parse -> print gives the same text and the same hash, and the parsed program verifies.
void expect_round_trip(const std::string& text) {
  ir::Program p = ir::parse(text);
  EXPECT_EQ(ir::print(p), text);
  ir::verify(p);
  EXPECT_EQ(ir::structural_hash(p), ir::structural_hash(ir::parse(ir::print(p))));
}

void expect_parse_error(const std::string& text, const std::string& part) {
  expect_error([&] { ir::parse(text); }, {part});
}

template <class F, class... A>
std::string trace_text(F f, const A&... a) {
  return fx::jit(f, fx::Backend::Interp).lower(a...).traced_ir();
}

// A program with every kind of region, for the malformed-input tests.
const char* const kLoops =
    "func @main(%0: f32[3], %1: f32[4,3], %2: bool[]) -> (f32[3], f32[4], f32[3]) {\n"
    "  %3, %4 = scan %0, %1 {length=4, carries=1, xs=1, reverse=true} : f32[3], f32[4]\n"
    "    body(%0: i32[], %1: f32[3], %2: f32[3]) {\n"
    "      %3 = add %1, %2 : f32[3]\n"
    "      %4 = reduce_sum %3 {axes=[0]} : f32[]\n"
    "      yield %3, %4\n"
    "    }\n"
    "  %5 = while %3 {carries=1, max_iters=50} : f32[3]\n"
    "    cond(%0: f32[3]) {\n"
    "      %1 = reduce_max %0 {axes=[0]} : f32[]\n"
    "      %2 = constant {data=[1e+10]} : f32[]\n"
    "      %3 = lt %1, %2 : bool[]\n"
    "      yield %3\n"
    "    }\n"
    "    body(%0: f32[3]) {\n"
    "      %1 = constant {data=[-0.5,inf,nan]} : f32[3]\n"
    "      %2 = mul %0, %1 : f32[3]\n"
    "      yield %2\n"
    "    }\n"
    "  %6 = cond %2, %5 : f32[3]\n"
    "    then(%0: f32[3]) {\n"
    "      yield %0\n"
    "    }\n"
    "    else(%0: f32[3]) {\n"
    "      %1 = slice %0 {starts=[1], limits=[3], strides=[1]} : f32[2]\n"
    "      %2 = pad %1 {strides=[1], padding=[0,1]} : f32[3]\n"
    "      yield %2\n"
    "    }\n"
    "  return %3, %4, %6\n"
    "}\n";

}  // namespace

TEST(IrParser, RoundTripsHandWrittenLoops) { expect_round_trip(kLoops); }

TEST(IrParser, RoundTripsEveryOpFamily) {
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

TEST(IrParser, RoundTripsTracedNestedRegionsAndSpecialConstants) {
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

TEST(IrParser, RoundTripsDifferentiatedPrograms) {
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

TEST(IrParser, RoundTripsSixteenBitFloatsAndHashesTheirDtypes) {
  const std::string halves =
      "func @main(%0: f16[2,3], %1: bf16[3]) -> (bf16[2,3], f16[]) {\n"
      "  %2 = convert %0 : bf16[2,3]\n"
      "  %3 = broadcast %1 : bf16[2,3]\n"
      "  %4 = mul %2, %3 : bf16[2,3]\n"
      "  %5 = constant {data=[0.5]} : f16[]\n"
      "  return %4, %5\n"
      "}\n";
  expect_round_trip(halves);
  std::string as_f32 = halves;
  for (size_t at = as_f32.find("f16"); at != std::string::npos; at = as_f32.find("f16", at + 3)) {
    if (at == 0 || as_f32[at - 1] != 'b') as_f32.replace(at, 3, "f32");
  }
  EXPECT_NE(ir::structural_hash(ir::parse(halves)), ir::structural_hash(ir::parse(as_f32)));
  expect_parse_error("func @main(%0: f8[2]) -> (f8[2]) {\n  return %0\n}\n",
                     "expected f32, f64, i32, bool, f16 or bf16");
}

TEST(IrParser, RoundTripsThePermissionToSumInF16AndChecksWhereItIsGiven) {
  const std::string allowed =
      "func @main(%0: f16[2,3], %1: f16[3,4]) -> (f16[2,4]) {\n"
      "  %2 = matmul %0, %1 {f16_sums=true} : f16[2,4]\n"
      "  return %2\n"
      "}\n";
  expect_round_trip(allowed);
  std::string plain = allowed;
  plain.erase(plain.find(" {f16_sums=true}"), 16);
  EXPECT_NE(ir::structural_hash(ir::parse(allowed)), ir::structural_hash(ir::parse(plain)));
  expect_parse_error(
      "func @main(%0: f16[2]) -> (f16[2]) {\n  %1 = add %0, %0 {f16_sums=true} : f16[2]\n  return %1\n}\n",
      "f16_sums applies to matmul only");
  expect_parse_error(
      "func @main(%0: bf16[2,3], %1: bf16[3,4]) -> (bf16[2,4]) {\n"
      "  %2 = matmul %0, %1 {f16_sums=true} : bf16[2,4]\n  return %2\n}\n",
      "f16_sums applies to f16 operands");
}

TEST(IrParser, KeepsTheSignOfZeroAndReadsAnyValueNumbering) {
  // Value numbers need not be canonical: any distinct numbers will do, and printing renumbers.
  ir::Program p = ir::parse(
      "func @f(%7: f64[]) -> (f64[]) {\n"
      "  %3 = constant {data=[-0]} : f64[]\n"
      "  %12 = add %7, %3 : f64[]\n"
      "  return %12\n"
      "}\n");
  EXPECT_TRUE(std::signbit(p.body.nodes[0].attrs.data.at(0)));
  EXPECT_EQ(ir::print(p),
            "func @f(%0: f64[]) -> (f64[]) {\n"
            "  %1 = constant {data=[-0]} : f64[]\n"
            "  %2 = add %0, %1 : f64[]\n"
            "  return %2\n"
            "}\n");
}

TEST(IrParser, ErrorsNameLineColumnAndWhatWasExpected) {
  const std::string head = "func @main(%0: f32[2]) -> (f32[2]) {\n";
  const std::string good = head + "  %1 = exp %0 : f32[2]\n  return %1\n}\n";
  EXPECT_NO_THROW(ir::parse(good));
  auto with_line = [&](const std::string& line) { return head + line + "\n  return %1\n}\n"; };
  expect_parse_error("", "line 1, column 1: expected 'func', found the end of the text");
  expect_parse_error(with_line("  %1 = expo %0 : f32[2]"), "line 2, column 8: unknown op 'expo'");
  expect_parse_error(with_line("  %1 = exp %5 : f32[2]"), "line 2, column 12: %5 is not defined");
  expect_parse_error(with_line("  %1 = exp %-1 : f32[2]"), "value numbers are >= 0");
  expect_parse_error(with_line("  %1 = exp %0 : f32[3]"), "line 2, column 8: the result types written do not match");
  expect_parse_error(with_line("  %1 = exp %0 : f8[2]"), "unknown dtype 'f8'");
  expect_parse_error(with_line("  %1 = add %0, %0, %0 : f32[2]"), "line 2, column 8: op 'add': expected 2 operand(s)");
  expect_parse_error(with_line("  %1, %2 = exp %0 : f32[2]"), "the node names 2 result(s) but writes 1 type(s)");
  expect_parse_error(with_line("  %0 = exp %0 : f32[2]"), "%0 is defined twice");
  expect_parse_error(with_line("  %1 = exp %0 {axes=[1} : f32[2]"), "line 2, column 23: expected ']', found '} : f32[2]'");
  expect_parse_error(with_line("  %1 = exp %0 {colour=1} : f32[2]"), "unknown attribute 'colour'");
  expect_parse_error(with_line("  %1 = exp %0 {axes=[0], axes=[0]} : f32[2]"),
                     "line 2, column 26: attribute 'axes' is given twice");
  expect_parse_error(with_line("  %1 = exp %0 {reverse=maybe} : f32[2]"), "expected true or false, found 'maybe'");
  expect_parse_error(with_line("  %1 = exp %0 {axes=[99999999999999999999]} : f32[2]"), "expected an integer");
  expect_parse_error(with_line("  %1 = constant {data=[1e999]} : f32[2]"), "expected a number");
  expect_parse_error(with_line("  %1 = constant {data=[--1]} : f32[2]"), "expected a number");
  expect_parse_error(with_line("  %1 = constant {data=[1]} : f32[2000000,2000000]"), "larger than 2^40 elements");
  expect_parse_error(with_line("  %1 = constant {data=[1]} : f32[-2]"), "negative");
  expect_parse_error("func @main(%0: i32[2]) -> (i32[2]) {\n  %1 = exp %0 : i32[2]\n  return %1\n}\n",
                     "expected a float dtype");
  expect_parse_error("func @main(%0: f32[2]) -> (f32[3]) {\n  return %0\n}\n", "do not match the declared result");
  expect_parse_error(good + "junk", "line 5, column 1: unexpected text after the end");
  expect_parse_error(good.substr(0, 30), "line 1");
}

TEST(IrParser, ErrorsInRegions) {
  const std::string head = "func @main(%0: f32[]) -> (f32[]) {\n  %1 = scan %0 {length=1, carries=1} : f32[]\n";
  auto scan_with = [&](const std::string& region) { return head + region + "  return %1\n}\n"; };
  EXPECT_NO_THROW(ir::parse(scan_with("    body(%0: i32[], %1: f32[]) {\n      yield %1\n    }\n")));
  expect_parse_error(scan_with("    loop(%0: i32[], %1: f32[]) {\n      yield %1\n    }\n"),
                     "line 3, column 5: expected region 'body' of scan, found 'loop(");
  expect_parse_error(scan_with("    body(%0: i32[], %1: f32[]) {\n      return %1\n    }\n"),
                     "line 4, column 7: expected 'yield', found 'return");
  // Regions are closed: the outer %1 is not visible inside, and the body has no %2 of its own.
  expect_parse_error(scan_with("    body(%0: i32[], %1: f32[]) {\n      %3 = exp %2 : f32[]\n      yield %3\n    }\n"),
                     "line 4, column 16: %2 is not defined before this use in its region");
  expect_parse_error(scan_with("    body(%0: i32[]) {\n      yield %0\n    }\n"),
                     "line 2, column 8: op 'scan': body region takes (i32[]), expected (i32[], f32[])");
  expect_parse_error(
      "func @main(%0: f32[]) -> (f32[]) {\n  %1 = while %0 {carries=1} : f32[]\n"
      "    body(%0: f32[]) {\n      yield %0\n    }\n",
      "expected region 'cond' of while");
}

TEST(IrParser, HugeAttributeValuesAreErrors) {
  // Attribute values near INT64_MAX must be refused (or accepted, where valid) without
  // overflowing any size computation: a sanitizer build turns an overflow into a failure here.
  const std::string m = "9223372036854775807";
  auto program = [](const std::string& params, const std::string& node, const std::string& result) {
    return "func @main(" + params + ") -> (" + result + ") {\n  " + node + " : " + result + "\n  return %9\n}\n";
  };
  const std::string image = "%0: f32[1,1,4,4], %1: f32[1,1,2,2]";
  for (const std::string& text : {
           program("%0: f32[2]", "%9 = pad %0 {strides=[1], padding=[" + m + "," + m + "]}", "f32[2]"),
           program("%0: f32[2]", "%9 = pad %0 {strides=[" + m + "], padding=[0,0]}", "f32[2]"),
           program(image, "%9 = conv2d %0, %1 {strides=[1,1], padding=[0,0,0,0], dilation=[" + m + "," + m + "]}",
                   "f32[1,1,1,1]"),
           program(image, "%9 = conv2d %0, %1 {strides=[1,1], padding=[" + m + "," + m + ",0,0], dilation=[1,1]}",
                   "f32[1,1,1,1]"),
           program("%0: f32[]", "%9 = scan %0 {length=1, carries=" + m + ", xs=" + m + "}", "f32[]"),
           program("%0: f32[2]", "%9 = reduce_sum %0 {axes=[-" + m + "]}", "f32[2]"),
       }) {
    EXPECT_THROW(ir::parse(text), fx::Error) << text;
  }
  // A stride beyond the dimension is valid: it takes one element.
  EXPECT_NO_THROW(ir::parse(program("%0: f32[2]", "%9 = slice %0 {starts=[1], limits=[2], strides=[" + m + "]}", "f32[1]")));
}

TEST(IrParser, DeepNestingIsAnErrorNotACrash) {
  std::string text = "func @main(%0: f32[]) -> (f32[]) {\n";
  for (int i = 0; i < 100000; ++i) text += "%1 = scan %0 {length=1, carries=1} : f32[] body(%0: i32[], %1: f32[]) {\n";
  expect_parse_error(text, "nested too deeply");
}

TEST(IrParser, EveryPrefixIsAnErrorNotACrash) {
  const std::string text = kLoops;
  const size_t complete = text.rfind('}') + 1;
  for (size_t n = 0; n < text.size(); ++n) {
    if (n < complete) {
      EXPECT_THROW(ir::parse(text.substr(0, n)), fx::Error) << "prefix of " << n << " characters";
    } else {
      EXPECT_NO_THROW(ir::parse(text.substr(0, n)));
    }
  }
}

TEST(IrParser, MutatedTextParsesAndRoundTripsOrRaisesError) {
  // A deterministic small fuzzer: replace, delete or duplicate bytes of a valid text. Whatever
  // comes out must either be a program that verifies and round-trips, or raise fluxion::Error
  // (any other exception fails the test; a crash fails the run).
  const std::string base = kLoops;
  const std::string alphabet = "%0123456789-+.,[]{}()=:@ \nabefilnrxy_/";
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&](uint64_t bound) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<size_t>((state >> 33) % bound);
  };
  int parsed = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string t = base;
    for (int edits = 1 + static_cast<int>(next(3)); edits > 0; --edits) {
      size_t at = next(t.size());
      switch (next(3)) {
        case 0: t[at] = alphabet[next(alphabet.size())]; break;
        case 1: t.erase(at, 1 + next(4)); break;
        default: t.insert(at, t.substr(next(t.size()), 1 + next(16))); break;
      }
      if (t.empty()) t = "x";
    }
    try {
      ir::Program p = ir::parse(t);
      ++parsed;
      ir::verify(p);
      EXPECT_EQ(ir::print(ir::parse(ir::print(p))), ir::print(p)) << t;
    } catch (const fx::Error&) {
    }
  }
  EXPECT_GT(parsed, 0);  // some mutations (a digit in a constant, say) stay valid
}
