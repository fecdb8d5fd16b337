// The verifier: checks that a program is well formed, so that a pass that breaks the IR is
// caught where it ran (the pipeline verifies after every step in FLUXION_VERIFY_IR builds).
#include <string>
#include <vector>

#include "fluxion/error.h"
#include "ir/ir.h"

namespace fluxion::ir {
namespace {

void verify_region(const Region& r, const std::string& where) {
  auto bad = [&](const std::string& what) { detail::fail("verify", where + ": " + what); };
  std::vector<bool> defined(r.types.size(), false);
  auto define = [&](ValueId v, const std::string& what) {
    if (v < 0 || static_cast<size_t>(v) >= r.types.size()) bad(what + " %" + std::to_string(v) + " has no type");
    if (defined[static_cast<size_t>(v)]) bad(what + " %" + std::to_string(v) + " is defined twice");
    defined[static_cast<size_t>(v)] = true;
  };
  auto require_defined = [&](ValueId v, const std::string& what) {
    if (v < 0 || static_cast<size_t>(v) >= r.types.size() || !defined[static_cast<size_t>(v)]) {
      bad(what + " uses %" + std::to_string(v) + ", which is not defined before it in this region");
    }
  };
  for (ValueId p : r.params) define(p, "parameter");
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const Node& n = r.nodes[i];
    std::string what = "node " + std::to_string(i) + " (" + op_name(n.op) + ")";
    std::vector<TensorType> in;
    for (ValueId v : n.operands) {
      require_defined(v, what);
      in.push_back(r.type(v));
    }
    for (size_t j = 0; j < n.regions.size(); ++j) verify_region(n.regions[j], where + ", " + what + " region " + std::to_string(j));
    std::vector<TensorType> declared;
    for (ValueId v : n.results) {
      if (v < 0 || static_cast<size_t>(v) >= r.types.size()) bad(what + " defines %" + std::to_string(v) + ", which has no type");
      declared.push_back(r.type(v));
    }
    // The shape rule's message names the op and the operand types; the node index and the
    // enclosing regions say where it is.
    std::vector<TensorType> want;
    try {
      want = infer_types(n.op, in, n.attrs, declared, n.regions);
    } catch (const Error& e) {
      bad(what + ": " + detail::without_prefix(e));
    }
    if (want != declared) {
      std::string got;
      for (const TensorType& t : declared) got += (got.empty() ? "" : ", ") + t.str();
      std::string exp;
      for (const TensorType& t : want) exp += (exp.empty() ? "" : ", ") + t.str();
      bad(what + " has result types (" + got + "), its shape rule gives (" + exp + ")");
    }
    for (ValueId v : n.results) define(v, what + " result");
  }
  for (ValueId v : r.results) require_defined(v, "the region's results");
}

}  // namespace

void verify(const Region& r) { verify_region(r, "region"); }
void verify(const Program& p) { verify_region(p.body, "func @" + p.name); }

}  // namespace fluxion::ir
