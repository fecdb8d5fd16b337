// The shape of every pass test: parse a small program, run the pass, compare the printed result.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "ir/ir.h"
#include "transforms/passes/passes.h"

namespace pass_test {

namespace ir = fluxion::ir;
namespace passes = fluxion::passes;

// Parses `in`, applies `pass` to its body, and checks that the pass reports `changes`, prints
// `want`, and leaves a program that verifies.
template <class Pass>
void expect_pass(Pass pass, const std::string& in, const std::string& want, bool changes = true) {
  ir::Program p = ir::parse(in);
  EXPECT_EQ(pass(p.body), changes);
  EXPECT_EQ(ir::print(p), want);
  EXPECT_NO_THROW(ir::verify(p));
}

}  // namespace pass_test
