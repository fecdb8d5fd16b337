// The verifier: accepts built and parsed programs; rejects each kind of broken IR with a
// message that names the node, its op and the problem.
#include <gtest/gtest.h>

#include <string>

#include "ir/ir.h"
#include "programs.h"

using namespace ir_test;

namespace {

const char* const kScan =
    "func @main(%0: f32[]) -> (f32[]) {\n"
    "  %1 = scan %0 {length=2, carries=1} : f32[]\n"
    "    body(%0: i32[], %1: f32[]) {\n"
    "      %2 = exp %1 : f32[]\n"
    "      %3 = add %2, %1 : f32[]\n"
    "      yield %3\n"
    "    }\n"
    "  return %1\n"
    "}\n";

}  // namespace

TEST(IrVerifier, AcceptsBuiltAndParsedPrograms) {
  EXPECT_NO_THROW(ir::verify(hand_built()));
  EXPECT_NO_THROW(ir::verify(ir::parse(kScan)));
  EXPECT_NO_THROW(ir::verify(ir::parse(kScan).body.nodes[0].regions[0]));
}

TEST(IrVerifier, UseBeforeDefinition) {
  ir::Program p = hand_built();
  std::swap(p.body.nodes[0], p.body.nodes[1]);
  expect_error([&] { ir::verify(p); }, {"func @main: node 0 (add) uses %", "not defined before it"});
}

TEST(IrVerifier, OperandIdOutOfRange) {
  ir::Program p = hand_built();
  p.body.nodes[1].operands[0] = -1;
  expect_error([&] { ir::verify(p); }, {"node 1 (add) uses %-1"});
  p.body.nodes[1].operands[0] = 1000;
  expect_error([&] { ir::verify(p); }, {"node 1 (add) uses %1000"});
}

TEST(IrVerifier, ResultTypeDisagreesWithTheShapeRule) {
  ir::Program p = hand_built();
  p.body.types[static_cast<size_t>(p.body.nodes[2].results[0])] = f32({3});
  expect_error([&] { ir::verify(p); },
               {"node 2 (reduce_sum) has result types (f32[3]), its shape rule gives (f32[2])"});
}

TEST(IrVerifier, ShapeRuleFailureNamesTheNode) {
  ir::Program p = hand_built();
  p.body.nodes[2].attrs.axes = {5};
  expect_error([&] { ir::verify(p); }, {"node 2 (reduce_sum): op 'reduce_sum': axis 5 is out of range"});
}

TEST(IrVerifier, ScatterAddShapeRule) {
  auto program = [](const std::string& updates, const std::string& result, const std::string& axis) {
    return "func @main(%0: " + updates + ", %1: i32[4]) -> (" + result + ") {\n  %2 = scatter_add %0, %1 {axes=[" +
           axis + "]} : " + result + "\n  return %2\n}\n";
  };
  EXPECT_NO_THROW(ir::verify(ir::parse(program("f32[2,4,3]", "f32[2,5,3]", "1"))));
  EXPECT_NO_THROW(ir::verify(ir::parse(program("i32[4,3]", "i32[1,3]", "0"))));
  expect_error([&] { ir::parse(program("f32[2,4,3]", "f32[2,5,2]", "1")); },
               {"op 'scatter_add'", "updates must be shaped [2,4,2]", "f32[2,4,3], i32[4]"});
  expect_error([&] { ir::parse(program("f32[2,4,3]", "f64[2,5,3]", "1")); },
               {"declared dtype must equal the updates'"});
  expect_error([&] { ir::parse(program("bool[4]", "bool[2]", "0")); }, {"expected a numeric dtype"});
  expect_error([&] { ir::parse(program("f32[2,4]", "f32[2,3]", "2")); }, {"axis 2 is out of range for rank 2"});
  expect_error([&] { ir::parse(program("f32[2,4]", "f32[2,0]", "1")); }, {"cannot scatter into an empty axis"});
}

TEST(IrVerifier, ValueDefinedTwice) {
  ir::Program p = hand_built();
  p.body.nodes[1].results = p.body.nodes[0].results;
  p.body.nodes[1].operands = {p.body.params[0], p.body.params[0]};
  expect_error([&] { ir::verify(p); }, {"node 1 (add) result %", "is defined twice"});
  ir::Program q = hand_built();
  q.body.params[1] = q.body.params[0];
  expect_error([&] { ir::verify(q); }, {"parameter %", "is defined twice"});
}

TEST(IrVerifier, ResultWithoutATypeOrADefinition) {
  ir::Program p = hand_built();
  p.body.results = {100};
  expect_error([&] { ir::verify(p); }, {"the region's results uses %100"});
  ir::Program q = hand_built();
  q.body.nodes.back().results = {100};
  expect_error([&] { ir::verify(q); }, {"node 4 (mul) defines %100, which has no type"});
}

TEST(IrVerifier, RegionsAreClosed) {
  // The body's "add" is pointed at a value id of the enclosing region. In the body that id is
  // either not a value at all or one not yet defined; both are errors.
  ir::Program p = ir::parse(kScan);
  ir::Node& add = p.body.nodes[0].regions[0].nodes[1];
  add.operands[1] = 7;
  expect_error([&] { ir::verify(p); }, {"func @main, node 0 (scan) region 0: node 1 (add) uses %7"});
  add.operands[1] = add.results[0];
  expect_error([&] { ir::verify(p); }, {"region 0: node 1 (add) uses %", "not defined before it"});
}

TEST(IrVerifier, RegionSignatureMustFitItsOp) {
  ir::Program p = ir::parse(kScan);
  // One more yielded value is one more per-step output, which the scan node does not have.
  p.body.nodes[0].regions[0].results.push_back(p.body.nodes[0].regions[0].params[0]);
  expect_error([&] { ir::verify(p); }, {"node 0 (scan) has result types (f32[]), its shape rule gives (f32[], i32[2])"});
  ir::Program q = ir::parse(kScan);
  q.body.nodes[0].regions[0].params.pop_back();
  expect_error([&] { ir::verify(q); }, {"region 0: node 0 (exp) uses %"});
  ir::Program r = ir::parse(kScan);
  r.body.nodes[0].regions.clear();
  expect_error([&] { ir::verify(r); }, {"node 0 (scan): op 'scan': expected 1 region(s), got 0"});
}
