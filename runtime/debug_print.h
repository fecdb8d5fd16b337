// The host side of debug_print (ops.def): what the interpreter, the CPU program's helper and the
// Vulkan program's host steps call, so that every backend prints the same line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"

namespace fluxion::runtime {

// One debug_print node's run-time description: its format and its operands' types.
struct PrintCall {
  std::string format;
  std::vector<TensorType> types;
  bool operator==(const PrintCall&) const = default;
};

// The description of debug_print node n of region r.
PrintCall print_call(const ir::Node& n, const ir::Region& r);

// `call` as one string without NUL bytes (for compiled code to hold), and back. decode_print
// raises Error for a string encode_print did not write.
std::string encode_print(const PrintCall& call);
PrintCall decode_print(std::string_view encoded);

// The line `call` prints when operand i's bytes are at operands[i] (host memory).
std::string format_print(const PrintCall& call, const void* const* operands);

// Hands `line` to the print handler (fluxion/runtime.h): standard output by default.
void emit_print(const std::string& line);

}  // namespace fluxion::runtime
