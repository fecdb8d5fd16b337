// The canonical node order: programs that are one graph with their independent nodes stored in
// other orders (at the top level and in nested scan and cond regions, dead nodes included)
// hash and print equal once canonical; a different graph hashes differently; collectives keep
// their program order; the order of a left-to-right trace is already canonical.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "programs.h"

using namespace ir_test;

namespace {

bool ordered(const ir::Node& n) {
  if (ir::is_collective(n.op) || ir::has_effects(n)) return true;
  for (const ir::Region& inner : n.regions) {
    if (ir::has_collectives(inner)) return true;
  }
  return false;
}

// Stores the nodes of `r` (and of its nested regions) in a random topological order: any node
// whose operands are defined, and, for a collective, whose previous collective is placed, may
// come next. The program means the same.
void shuffle(ir::Region& r, std::mt19937& rng) {
  for (ir::Node& n : r.nodes) {
    for (ir::Region& inner : n.regions) shuffle(inner, rng);
  }
  std::vector<bool> defined(r.types.size(), false);
  for (ir::ValueId v : r.params) defined[static_cast<size_t>(v)] = true;
  std::vector<bool> placed(r.nodes.size(), false);
  std::vector<ir::Node> out;
  size_t next_ordered = 0;  // the first collective not yet placed
  auto advance = [&] {
    while (next_ordered < r.nodes.size() && (placed[next_ordered] || !ordered(r.nodes[next_ordered]))) ++next_ordered;
  };
  advance();
  while (out.size() < r.nodes.size()) {
    std::vector<size_t> ready;
    for (size_t i = 0; i < r.nodes.size(); ++i) {
      if (placed[i]) continue;
      bool ok = !ordered(r.nodes[i]) || i == next_ordered;
      for (ir::ValueId v : r.nodes[i].operands) ok = ok && defined[static_cast<size_t>(v)];
      if (ok) ready.push_back(i);
    }
    ASSERT_FALSE(ready.empty());
    size_t pick = ready[std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng)];
    placed[pick] = true;
    for (ir::ValueId v : r.nodes[pick].results) defined[static_cast<size_t>(v)] = true;
    out.push_back(r.nodes[pick]);
    advance();
  }
  r.nodes = std::move(out);
}

// A program with independent work at every level: top-level nodes, a scan and a cond whose
// regions have independent nodes, two results, and dead nodes (one of them a chain).
const char* const kProgram =
    "func @main(%0: f32[3], %1: f32[3], %2: bool[]) -> (f32[3], f32[3]) {\n"
    "  %3 = exp %0 : f32[3]\n"
    "  %4 = tanh %1 : f32[3]\n"
    "  %5 = add %3, %4 : f32[3]\n"
    "  %6 = neg %1 : f32[3]\n"
    "  %7 = sub %5, %6 : f32[3]\n"
    "  %8 = scan %7, %3 {length=4, carries=1} : f32[3]\n"
    "    body(%0: i32[], %1: f32[3], %2: f32[3]) {\n"
    "      %3 = mul %1, %2 : f32[3]\n"
    "      %4 = sin %2 : f32[3]\n"
    "      %5 = convert %0 : f32[]\n"
    "      %6 = broadcast %5 : f32[3]\n"
    "      %7 = add %3, %4 : f32[3]\n"
    "      %8 = add %7, %6 : f32[3]\n"
    "      yield %8\n"
    "    }\n"
    "  %9 = cond %2, %8, %4 : f32[3]\n"
    "    then(%0: f32[3], %1: f32[3]) {\n"
    "      %2 = exp %0 : f32[3]\n"
    "      %3 = neg %1 : f32[3]\n"
    "      %4 = mul %2, %3 : f32[3]\n"
    "      yield %4\n"
    "    }\n"
    "    else(%0: f32[3], %1: f32[3]) {\n"
    "      %2 = sub %1, %0 : f32[3]\n"
    "      yield %2\n"
    "    }\n"
    "  %10 = mul %0, %1 : f32[3]\n"
    "  %11 = sin %10 : f32[3]\n"
    "  %12 = constant {data=[2]} : f32[3]\n"
    "  %13 = mul %6, %12 : f32[3]\n"
    "  %14 = exp %4 : f32[3]\n"
    "  return %9, %13\n"
    "}\n";

uint64_t hash_of(const std::string& text) { return ir::structural_hash(ir::parse(text)); }

std::string edit(std::string base, const std::string& from, const std::string& to) {
  size_t at = base.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) base.replace(at, from.size(), to);
  return base;
}

}  // namespace

TEST(IrCanonicalOrder, PermutedOrdersOfOneGraphHashAndPrintEqual) {
  const ir::Program base = ir::parse(kProgram);
  const std::string canonical = ir::print_canonical(base);
  const uint64_t hash = ir::structural_hash(base);
  std::mt19937 rng(7);
  int differently_stored = 0;
  for (int trial = 0; trial < 50; ++trial) {
    ir::Program p = base;
    shuffle(p.body, rng);
    ir::verify(p);
    differently_stored += ir::print(p) != ir::print(base);
    EXPECT_EQ(ir::print_canonical(p), canonical) << ir::print(p);
    EXPECT_EQ(ir::structural_hash(p), hash) << ir::print(p);
    // Reordered in place, the program prints its canonical text, which parses back to itself.
    ir::canonicalize_order(p);
    ir::verify(p);
    EXPECT_EQ(ir::print(p), canonical);
    EXPECT_EQ(ir::print(ir::parse(ir::print(p))), canonical);
    EXPECT_FALSE(ir::canonicalize_order(p));  // idempotent
  }
  EXPECT_GT(differently_stored, 40);  // the shuffles really did store other orders
}

TEST(IrCanonicalOrder, NodesAddedInPermutedOrdersWithRegionAdd) {
  // (exp(a) + tanh(b)) * (a - b), with the three independent nodes added in every order.
  const std::vector<std::vector<int>> orders = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  std::vector<std::string> texts;
  std::vector<uint64_t> hashes;
  for (const std::vector<int>& order : orders) {
    ir::Program p;
    ir::ValueId a = p.body.add_param(f32({4}));
    ir::ValueId b = p.body.add_param(f32({4}));
    ir::ValueId e = -1, t = -1, d = -1;
    for (int which : order) {
      if (which == 0) e = p.body.add(ir::Op::Exp, {a})[0];
      if (which == 1) t = p.body.add(ir::Op::Tanh, {b})[0];
      if (which == 2) d = p.body.add(ir::Op::Sub, {a, b})[0];
    }
    ir::ValueId s = p.body.add(ir::Op::Add, {e, t})[0];
    p.body.results = {p.body.add(ir::Op::Mul, {s, d})[0]};
    texts.push_back(ir::print_canonical(p));
    hashes.push_back(ir::structural_hash(p));
  }
  for (size_t i = 1; i < orders.size(); ++i) {
    EXPECT_EQ(texts[i], texts[0]);
    EXPECT_EQ(hashes[i], hashes[0]);
  }
  // The order of a trace that evaluates operands left to right.
  EXPECT_EQ(texts[0],
            "func @main(%0: f32[4], %1: f32[4]) -> (f32[4]) {\n"
            "  %2 = exp %0 : f32[4]\n"
            "  %3 = tanh %1 : f32[4]\n"
            "  %4 = add %2, %3 : f32[4]\n"
            "  %5 = sub %0, %1 : f32[4]\n"
            "  %6 = mul %4, %5 : f32[4]\n"
            "  return %6\n"
            "}\n");
}

TEST(IrCanonicalOrder, ALeftToRightTraceIsAlreadyCanonical) {
  ir::Program p = hand_built();
  EXPECT_EQ(ir::print_canonical(p), kHandBuiltText);
  EXPECT_EQ(ir::print(p), kHandBuiltText);
}

TEST(IrCanonicalOrder, DifferentGraphsHashDifferently) {
  const std::string base = kProgram;
  const uint64_t h = hash_of(base);
  EXPECT_NE(h, hash_of(edit(base, "%5 = add %3, %4", "%5 = mul %3, %4")));                    // op
  EXPECT_NE(h, hash_of(edit(base, "%7 = sub %5, %6", "%7 = sub %6, %5")));                    // operand order
  EXPECT_NE(h, hash_of(edit(base, "{length=4, carries=1}", "{length=5, carries=1}")));        // attribute
  EXPECT_NE(h, hash_of(edit(base, "data=[2]", "data=[3]")));                                  // constant
  EXPECT_NE(h, hash_of(edit(base, "%4 = sin %2 : f32[3]\n", "%4 = exp %2 : f32[3]\n")));      // nested op
  EXPECT_NE(h, hash_of(edit(base, "%2 = sub %1, %0 : f32[3]", "%2 = sub %0, %1 : f32[3]")));  // nested
  EXPECT_NE(h, hash_of(edit(base, "%14 = exp %4", "%14 = exp %3")));                          // a dead node
  EXPECT_NE(h, hash_of(edit(base, "return %9, %13", "return %13, %9")));                      // result order
}

TEST(IrCanonicalOrder, DeadNodesInAnyOrderHashEqual) {
  // Two dead chains and a dead constant, stored in two orders.
  const char* const a =
      "func @main(%0: f32[2]) -> (f32[2]) {\n"
      "  %1 = exp %0 : f32[2]\n"
      "  %2 = sin %1 : f32[2]\n"
      "  %3 = neg %0 : f32[2]\n"
      "  %4 = tanh %3 : f32[2]\n"
      "  %5 = constant {data=[1]} : f32[2]\n"
      "  %6 = add %0, %0 : f32[2]\n"
      "  return %6\n"
      "}\n";
  const char* const b =
      "func @main(%0: f32[2]) -> (f32[2]) {\n"
      "  %5 = constant {data=[1]} : f32[2]\n"
      "  %3 = neg %0 : f32[2]\n"
      "  %6 = add %0, %0 : f32[2]\n"
      "  %4 = tanh %3 : f32[2]\n"
      "  %1 = exp %0 : f32[2]\n"
      "  %2 = sin %1 : f32[2]\n"
      "  return %6\n"
      "}\n";
  EXPECT_NE(ir::print(ir::parse(a)), ir::print(ir::parse(b)));
  EXPECT_EQ(ir::print_canonical(ir::parse(a)), ir::print_canonical(ir::parse(b)));
  EXPECT_EQ(hash_of(a), hash_of(b));
  // Live nodes first, in walk order from the results; then the dead ones.
  const std::string canonical = ir::print_canonical(ir::parse(a));
  EXPECT_EQ(canonical.find("  %1 = add %0, %0"), canonical.find('\n') + 1) << canonical;
}

TEST(IrCanonicalOrder, CollectivesKeepTheirProgramOrder) {
  // Two independent all-reduces: swapping them is another program (every rank must meet them in
  // the same order), so it hashes differently, and canonicalisation never swaps them.
  const char* const sum_first =
      "func @main(%0: f32[2], %1: f32[2]) -> (f32[2]) {\n"
      "  %2 = all_reduce_sum %0 {ranks=2} : f32[2]\n"
      "  %3 = all_reduce_max %1 {ranks=2} : f32[2]\n"
      "  %4 = add %3, %2 : f32[2]\n"
      "  return %4\n"
      "}\n";
  const char* const max_first =
      "func @main(%0: f32[2], %1: f32[2]) -> (f32[2]) {\n"
      "  %3 = all_reduce_max %1 {ranks=2} : f32[2]\n"
      "  %2 = all_reduce_sum %0 {ranks=2} : f32[2]\n"
      "  %4 = add %3, %2 : f32[2]\n"
      "  return %4\n"
      "}\n";
  EXPECT_NE(hash_of(sum_first), hash_of(max_first));
  for (const char* text : {sum_first, max_first}) {
    ir::Program p = ir::parse(text);
    ir::canonicalize_order(p);
    EXPECT_EQ(p.body.nodes[0].op, ir::parse(text).body.nodes[0].op) << ir::print(p);
    EXPECT_EQ(p.body.nodes[1].op, ir::parse(text).body.nodes[1].op) << ir::print(p);
  }
  // A dead collective stays too, after the one before it.
  const char* const dead =
      "func @main(%0: f32[2], %1: f32[2]) -> (f32[2]) {\n"
      "  %2 = all_reduce_sum %0 {ranks=2} : f32[2]\n"
      "  %3 = all_reduce_max %1 {ranks=2} : f32[2]\n"
      "  %4 = exp %0 : f32[2]\n"
      "  return %4\n"
      "}\n";
  ir::Program p = ir::parse(dead);
  ir::canonicalize_order(p);
  ASSERT_EQ(p.body.nodes.size(), 3u);
  EXPECT_EQ(p.body.nodes[0].op, ir::Op::Exp);
  EXPECT_EQ(p.body.nodes[1].op, ir::Op::AllReduceSum);
  EXPECT_EQ(p.body.nodes[2].op, ir::Op::AllReduceMax);
  // Other nodes move freely around them: the same graph with an independent node stored
  // elsewhere hashes equal.
  const char* const moved =
      "func @main(%0: f32[2], %1: f32[2]) -> (f32[2]) {\n"
      "  %4 = exp %0 : f32[2]\n"
      "  %2 = all_reduce_sum %0 {ranks=2} : f32[2]\n"
      "  %3 = all_reduce_max %1 {ranks=2} : f32[2]\n"
      "  return %4\n"
      "}\n";
  EXPECT_EQ(hash_of(dead), hash_of(moved));
}

TEST(IrCanonicalOrder, BrokenIrKeepsEveryNode) {
  // A use before its definition (which the verifier rejects) still prints every node once.
  ir::Program p;
  ir::ValueId x = p.body.add_param(f32({2}));
  ir::ValueId later = p.body.new_value(f32({2}));
  ir::Node n;
  n.op = ir::Op::Neg;
  n.operands = {later};
  n.results = {p.body.new_value(f32({2}))};
  p.body.nodes.push_back(n);
  ir::Node m;
  m.op = ir::Op::Exp;
  m.operands = {x};
  m.results = {later};
  p.body.nodes.push_back(m);
  p.body.results = {n.results[0]};
  std::vector<size_t> order = ir::canonical_order(p.body);
  EXPECT_EQ(order, (std::vector<size_t>{1, 0}));
}
