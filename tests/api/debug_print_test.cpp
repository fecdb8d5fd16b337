// fluxion::debug::print: lines printed when the program runs, in program order, the same text on
// every backend as on the reference interpreter; once per loop iteration, from the branch a cond
// takes, once under grad, the whole batch under vmap; bad formats raise Error at the call.
#include <filesystem>
#include <string>
#include <vector>

#include "common/artifact_programs.h"
#include "common/test_util.h"
#include "fluxion/debug.h"
#include "ir/ir.h"

namespace fx = fluxion;
namespace ir = fluxion::ir;

namespace {

// Collects the printed lines while alive.
class PrintedLines {
 public:
  PrintedLines() : previous_(fx::set_print_handler([this](const std::string& l) { lines_.push_back(l); })) {}
  ~PrintedLines() { fx::set_print_handler(previous_); }
  PrintedLines(const PrintedLines&) = delete;
  PrintedLines& operator=(const PrintedLines&) = delete;
  // The lines printed so far, forgotten.
  std::vector<std::string> take() { return std::exchange(lines_, {}); }

 private:
  std::vector<std::string> lines_;
  fx::PrintHandler previous_;
};

}  // namespace

class DebugPrint : public fx::testing::BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(DebugPrint);

TEST_P(DebugPrint, PrintsValuesInProgramOrderEveryCall) {
  auto f = [](const fx::Tensor& x, const fx::Tensor& n) {
    fx::debug::print("x = {}", x);
    fx::Tensor y = fx::exp(x) * 2.0;
    fx::debug::print("y = {}, n = {} {{braces}}", y, n);
    fx::debug::print("sum {} is not returned", fx::sum(y));
    return y + 1.0;
  };
  fx::Array x(std::vector<float>{0, 1, -2, 0.5f}, {2, 2});
  fx::Array n(std::vector<int32_t>{7}, {});
  PrintedLines printed;
  fx::Array out = jit(f)(x, n);
  std::vector<std::string> lines = printed.take();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "x = [[0, 1], [-2, 0.5]]");
  EXPECT_EQ(lines[2].substr(0, 4), "sum ");
  EXPECT_EQ(lines[1].substr(lines[1].size() - 16), ", n = 7 {braces}");
  fx::jit(f, fx::Backend::Interp)(x, n);
  EXPECT_EQ(printed.take(), lines);
  EXPECT_ARRAY(out, {2, 2}, {3, 1 + 2 * std::exp(1.0), 1 + 2 * std::exp(-2.0), 1 + 2 * std::exp(0.5)},
               {.transcendental = true});
  jit(f)(x, n);
  EXPECT_EQ(printed.take(), lines);
  if (backend() != fx::Backend::Interp) {
    std::string kernels = jit(f).lower(x, n).kernels();
    EXPECT_NE(kernels.find("debug_print on the host"), std::string::npos) << kernels;
  }
}

TEST_P(DebugPrint, LoopsPrintEveryIterationAndCondOnlyTheBranchTaken) {
  auto f = [](const fx::Tensor& x) {
    fx::Tensor s = fx::fori_loop(
        0, 3,
        [](const fx::Tensor& i, const fx::Tensor& acc) {
          fx::debug::print("step {} acc {}", i, acc);
          return acc + fx::cast(i, fx::DType::f32);
        },
        x);
    fx::Tensor w = fx::while_loop([](const fx::Tensor& v) { return v < 20.0; },
                                  [](const fx::Tensor& v) {
                                    fx::debug::print("while {}", v);
                                    return v * 3.0;
                                  },
                                  s);
    return fx::cond(
        w > 25.0,
        [&] {
          fx::debug::print("big {}", w);
          return w;
        },
        [&] {
          fx::debug::print("small {}", w);
          return -w;
        });
  };
  fx::Array x(std::vector<float>{1}, {});
  PrintedLines printed;
  EXPECT_ARRAY(jit(f)(x), {}, {36});
  std::vector<std::string> want{"step 0 acc 1", "step 1 acc 1", "step 2 acc 2", "while 4", "while 12", "big 36"};
  EXPECT_EQ(printed.take(), want);
  fx::Array y(std::vector<float>{4}, {});
  EXPECT_ARRAY(jit(f)(y), {}, {-21});
  EXPECT_EQ(printed.take(),
            (std::vector<std::string>{"step 0 acc 4", "step 1 acc 4", "step 2 acc 5", "while 7", "small 21"}));
}

TEST_P(DebugPrint, GradPrintsTheForwardValuesOnce) {
  auto loss = [](const fx::Tensor& w) {
    fx::Tensor h = fx::fori_loop(
        0, 2,
        [](const fx::Tensor& i, const fx::Tensor& acc) {
          fx::debug::print("iteration {}", i);
          return acc * acc * 0.5 + 1.0;  // exact in f32: every program prints the same digits
        },
        w);
    fx::debug::print("h = {}", h);
    return fx::sum(h * h);
  };
  fx::Array w(std::vector<float>{0.5f, -0.25f}, {2});
  PrintedLines printed;
  auto [value, grads] = jit([&](const fx::Tensor& w) { return fx::value_and_grad(loss)(w); })(w);
  std::vector<std::string> lines = printed.take();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "iteration 0");
  EXPECT_EQ(lines[1], "iteration 1");
  EXPECT_EQ(lines[2], "h = [1.63281, 1.53174]");
  auto forward = fx::jit(
      [&](const fx::Tensor& w) { return fx::jvp(loss, std::make_tuple(w), {fx::ones_like(w)}).second; }, backend());
  forward(w);
  EXPECT_EQ(printed.take(), lines);
  auto plain = fx::jit(loss, fx::Backend::Interp)(w);
  EXPECT_EQ(printed.take(), lines);
  EXPECT_NEAR(value.item(), plain.item(), 1e-6);
}

TEST_P(DebugPrint, VmapPrintsTheWholeBatch) {
  auto f = [](const fx::Tensor& x, const fx::Tensor& c) {
    fx::debug::print("x {} c {}", x, c);
    return x * c;
  };
  fx::Array x(std::vector<float>{1, 2, 3, 4, 5, 6}, {3, 2});
  fx::Array c(std::vector<float>{10}, {});
  PrintedLines printed;
  jit([&](const fx::Tensor& x, const fx::Tensor& c) { return fx::vmap(f, {0, std::nullopt})(x, c); })(x, c);
  EXPECT_EQ(printed.take(), std::vector<std::string>{"x [[1, 2], [3, 4], [5, 6]] c 10"});
}

TEST_P(DebugPrint, AHandlerThatRaisesFailsTheCall) {
  auto previous = fx::set_print_handler([](const std::string&) { throw fx::Error("handler refused the line"); });
  auto f = jit([](const fx::Tensor& x) {
    fx::debug::print("x {}", x);
    return x + 1.0;
  });
  try {
    f(fx::Array(std::vector<float>{1}, {}));
    ADD_FAILURE() << "no Error";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("handler refused the line"), std::string::npos) << e.what();
  }
  fx::set_print_handler(previous);
}

TEST_P(DebugPrint, AnUnboundedWhileLoopPrintsEachIterationOnce) {
  // More iterations than the Vulkan backend records at first: the run that ran out is run
  // again with more recorded, and only the complete run's lines are printed.
  auto f = jit([](const fx::Tensor& n) {
    return fx::while_loop([&](const fx::Tensor& i) { return i < n; },
                          [](const fx::Tensor& i) {
                            fx::debug::print("{}", i);
                            return i + 1;
                          },
                          fx::zeros_like(n));
  });
  PrintedLines printed;
  EXPECT_ARRAY(f(fx::Array(std::vector<int32_t>{40}, {})), {}, {40});
  std::vector<std::string> want;
  for (int i = 0; i < 40; ++i) want.push_back(std::to_string(i));
  EXPECT_EQ(printed.take(), want);
}

// On each backend that exports programs (the interpreter does not).
TEST(DebugPrintExport, ExportedProgramsPrintWhenLoaded) {
  for (fx::Backend backend : fx::available_backends()) {
    if (backend == fx::Backend::Interp) continue;
    SCOPED_TRACE(fx::backend_name(backend));
    fx::Array x(std::vector<float>{1.5f, -2}, {2});
    fx::Compiled c = fx::jit(
                         [](const fx::Tensor& x) {
                           fx::Tensor s = fx::fori_loop(
                               0, 2,
                               [](const fx::Tensor& i, const fx::Tensor& acc) {
                                 fx::debug::print("{}: {}", i, acc);
                                 return acc * 2.0;
                               },
                               x);
                           fx::debug::print("done {{{}}}", fx::sum(s));
                           return s;
                         },
                         backend)
                         .lower(x);
    std::string path = fx::testing::temp_path("debug_print.fxa");
    c.save(path);
    fx::Compiled loaded = fx::load(path);
    std::filesystem::remove(path);
    PrintedLines printed;
    EXPECT_ARRAY(loaded.run({x})[0], {2}, {6, -8});
    EXPECT_EQ(printed.take(), (std::vector<std::string>{"0: [1.5, -2]", "1: [3, -4]", "done {-2}"}));
  }
}

TEST_P(DebugPrint, TheNumericsCheckDoesNotPrintAgainWhenItReplays) {
  fx::set_check_numerics(true);
  auto f = jit([](const fx::Tensor& x) {
    fx::debug::print("x {}", x);
    return fx::log(x);
  });
  PrintedLines printed;
  EXPECT_THROW(f(fx::Array(std::vector<float>{-1}, {1})), fx::Error);
  fx::set_check_numerics(false);
  EXPECT_EQ(printed.take(), std::vector<std::string>{"x [-1]"});
}

TEST(DebugPrintErrors, FormatsThatDoNotFitRaiseAtTheCall) {
  auto expect_error = [](auto f, const std::string& says) {
    try {
      fx::jit(f, fx::Backend::Interp)(fx::Array(std::vector<float>{1}, {}));
      ADD_FAILURE() << "no Error for " << says;
    } catch (const fx::Error& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(says), std::string::npos) << what;
      EXPECT_NE(what.find("debug_print_test.cpp"), std::string::npos) << what;
    }
  };
  expect_error(
      [](const fx::Tensor& x) {
        fx::debug::print("{} and {}", x);
        return x;
      },
      "has 2 field(s) for 1 operand(s)");
  expect_error(
      [](const fx::Tensor& x) {
        fx::debug::print("x} {}", x);
        return x;
      },
      "unmatched '}' at character 1");
}

TEST(DebugPrintIr, TheFormatRoundTripsThroughIrText) {
  ir::Program p;
  ir::ValueId x = p.body.add_param(fx::TensorType{fx::DType::f32, {2}});
  ir::Attrs a;
  a.text = "quote \" backslash \\ newline \n tab \t {}";
  p.body.add(ir::Op::DebugPrint, {x}, a);
  p.body.results = {x};
  std::string text = ir::print(p);
  EXPECT_NE(text.find(R"(text="quote \" backslash \\ newline \x0a tab \x09 {}")"), std::string::npos) << text;
  ir::Program q = ir::parse(text);
  ASSERT_EQ(q.body.nodes.size(), 1u);
  EXPECT_EQ(q.body.nodes[0].attrs.text, a.text);
  EXPECT_EQ(ir::print(q), text);
}

// fluxion::eager: values readable line by line, prints at once, results as jit's.
TEST(Eager, EveryLineHasItsValueAndResultsMatchJit) {
  std::vector<std::string> seen;
  bool look = true;
  auto f = [&](const fx::Tensor& w, const std::vector<fx::Tensor>& xs) {
    auto peek = [&](const fx::Tensor& t) {
      if (look) seen.push_back(fx::debug::value(t).str());
    };
    fx::Tensor h = fx::matmul(xs[0], w);
    peek(h);
    fx::Tensor g = fx::grad(
        [](const fx::Tensor& w, const fx::Tensor& x) { return fx::sum(fx::tanh(fx::matmul(x, w))); }, {0})(w, xs[1])[0];
    peek(g);
    fx::Tensor s = fx::fori_loop(
        0, 3, [](const fx::Tensor&, const fx::Tensor& acc) { return acc * 2.0; }, h);
    peek(s);
    return std::make_pair(s, g);
  };
  fx::Array w(std::vector<float>{1, -1, 0.5f, 2}, {2, 2});
  std::vector<fx::Array> xs{fx::Array(std::vector<float>{1, 2}, {1, 2}),
                            fx::Array(std::vector<float>{0.5f, -1}, {1, 2})};
  fx::reset_counters();
  auto [s, g] = fx::eager(f)(w, xs);
  EXPECT_EQ(fx::counters().compiles, 0u);
  look = false;
  auto [js, jg] = fx::jit(f, fx::Backend::Interp)(w, xs);
  EXPECT_EQ(s.to_doubles(), js.to_doubles());
  EXPECT_EQ(g.to_doubles(), jg.to_doubles());
  EXPECT_EQ(seen, (std::vector<std::string>{"f32[1,2] [[2, 3]]", jg.str(), "f32[1,2] [[16, 24]]"}));
}

TEST(Eager, PrintsHappenWhenTheirLineRuns) {
  std::vector<std::string> events;
  auto previous = fx::set_print_handler([&](const std::string& l) { events.push_back(l); });
  fx::eager([&](const fx::Tensor& x) {
    fx::debug::print("first {}", x);
    events.push_back("host code between the prints");
    fx::debug::print("second {}", x + 1.0);
    return x;
  })(fx::Array(std::vector<float>{1}, {}));
  fx::set_print_handler(previous);
  EXPECT_EQ(events, (std::vector<std::string>{"first 1", "host code between the prints", "second 2"}));
}

TEST(Eager, ValuesOutsideAnEagerFunctionAreErrors) {
  try {
    fx::jit(
        [](const fx::Tensor& x) {
          fx::debug::value(x);
          return x;
        },
        fx::Backend::Interp)(fx::Array(std::vector<float>{1}, {}));
    ADD_FAILURE() << "no Error";
  } catch (const fx::Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("has no value while its function is traced"), std::string::npos) << what;
    EXPECT_NE(what.find("debug_print_test.cpp"), std::string::npos) << what;
  }
  EXPECT_THROW(fx::eager([](const fx::Tensor& x) {
                 return fx::fori_loop(
                     0, 2,
                     [](const fx::Tensor&, const fx::Tensor& acc) {
                       fx::debug::value(acc);
                       return acc;
                     },
                     x);
               })(fx::Array(std::vector<float>{1}, {})),
               fx::Error);
}
