// Small programs built with Region::add, shared by the IR tests.
#pragma once

#include <string>

#include <fluxion/error.h>
#include <gtest/gtest.h>

#include "ir/ir.h"

namespace ir_test {

namespace fx = fluxion;
namespace ir = fluxion::ir;

inline fx::TensorType f32(fx::Shape s) { return {fx::DType::f32, std::move(s)}; }

// x + broadcast(b), summed over rows, times a constant. Value ids are deliberately not in
// definition order (an unused type slot comes first), to show the printer renumbers.
inline ir::Program hand_built(int64_t rows = 2) {
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

inline const char* const kHandBuiltText =
    "func @main(%0: f32[2,3], %1: f32[3]) -> (f32[2]) {\n"
    "  %2 = broadcast %1 : f32[2,3]\n"
    "  %3 = add %0, %2 : f32[2,3]\n"
    "  %4 = reduce_sum %3 {axes=[1]} : f32[2]\n"
    "  %5 = constant {data=[0.1]} : f32[2]\n"
    "  %6 = mul %4, %5 : f32[2]\n"
    "  return %6\n"
    "}\n";

// Runs `f`, which must raise fluxion::Error whose message contains every one of `parts`.
template <class F>
void expect_error(F f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no error raised; expected one containing '" << *parts.begin() << "'";
  } catch (const fx::Error& e) {
    for (const std::string& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

}  // namespace ir_test
