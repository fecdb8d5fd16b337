// The structural hash: equal for programs that print equal, whatever their value ids or source
// locations; different when an op, a shape, a dtype, an attribute or a constant changes.
#include <gtest/gtest.h>

#include <string>

#include "ir/ir.h"
#include "programs.h"

using namespace ir_test;

namespace {

uint64_t hash_of(const std::string& text) { return ir::structural_hash(ir::parse(text)); }

// `base` with the first occurrence of `from` replaced by `to` (which must occur).
std::string edit(std::string base, const std::string& from, const std::string& to) {
  size_t at = base.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) base.replace(at, from.size(), to);
  return base;
}

const char* const kSlice =
    "func @main(%0: f32[3]) -> (f32[2]) {\n"
    "  %1 = slice %0 {starts=[0], limits=[2], strides=[1]} : f32[2]\n"
    "  %2 = constant {data=[0]} : f32[2]\n"
    "  %3 = add %1, %2 : f32[2]\n"
    "  return %3\n"
    "}\n";

}  // namespace

TEST(IrHash, EqualForEqualStructureWithDifferentIdsAndLocations) {
  ir::Program a = hand_built();
  ir::Program b = ir::parse(ir::print(a));  // the same program with other value ids
  EXPECT_NE(a.body.types.size(), b.body.types.size());
  b.body.nodes[0].file = "elsewhere.cpp";
  b.body.nodes[0].line = 99;
  EXPECT_EQ(ir::structural_hash(a), ir::structural_hash(b));
  EXPECT_EQ(ir::structural_hash(a), hash_of(kHandBuiltText));
}

TEST(IrHash, ChangesWithOpShapeDtypeAttributeAndConstant) {
  const std::string base = kSlice;
  const uint64_t h = hash_of(base);
  EXPECT_NE(h, hash_of(edit(base, "add", "mul")));                                         // op
  EXPECT_NE(h, hash_of(edit(base, "starts=[0], limits=[2]", "starts=[1], limits=[3]")));  // attribute
  EXPECT_NE(h, hash_of(edit(base, "data=[0]", "data=[-0]")));                              // constant
  EXPECT_NE(h, hash_of(edit(base, "data=[0]", "data=[0,1e-300]")));                        // constant
  EXPECT_NE(h, hash_of(edit(base, "%1, %2", "%2, %1")));                                  // operand order
  std::string f64 = base;
  for (size_t at; (at = f64.find("f32")) != std::string::npos;) f64.replace(at, 3, "f64");
  EXPECT_NE(h, hash_of(f64));  // dtype
  EXPECT_NE(ir::structural_hash(hand_built(2)), ir::structural_hash(hand_built(3)));  // shape
}
