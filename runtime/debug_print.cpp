#include "runtime/debug_print.h"

#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <sstream>

#include "fluxion/array.h"
#include "fluxion/error.h"
#include "fluxion/runtime.h"
#include "ir/debug_format.h"

namespace fluxion {
namespace {

std::mutex& handler_mutex() {
  static std::mutex mu;
  return mu;
}

PrintHandler& handler() {
  static PrintHandler h;
  return h;
}

}  // namespace

PrintHandler set_print_handler(PrintHandler h) {
  std::lock_guard<std::mutex> lock(handler_mutex());
  std::swap(handler(), h);
  return h;
}

namespace runtime {

PrintCall print_call(const ir::Node& n, const ir::Region& r) {
  PrintCall c;
  c.format = n.attrs.text;
  for (ir::ValueId v : n.operands) c.types.push_back(r.type(v));
  return c;
}

// One line per operand type ("dtype rank dims..."), after the operand count; the format last.
std::string encode_print(const PrintCall& call) {
  std::string out = std::to_string(call.types.size()) + "\n";
  for (const TensorType& t : call.types) {
    out += std::to_string(static_cast<int>(t.dtype)) + " " + std::to_string(t.rank());
    for (int64_t d : t.shape) out += " " + std::to_string(d);
    out += "\n";
  }
  return out + call.format;
}

PrintCall decode_print(std::string_view encoded) {
  std::istringstream in{std::string(encoded)};
  PrintCall c;
  size_t count = 0;
  auto fail = [] { detail::fail("debug_print", "internal error: a malformed print description"); };
  if (!(in >> count) || count > encoded.size()) fail();
  for (size_t i = 0; i < count; ++i) {
    int dtype = 0;
    size_t rank = 0;
    if (!(in >> dtype >> rank) || dtype < 0 || dtype > static_cast<int>(kLastDType) || rank > encoded.size()) fail();
    TensorType t{static_cast<DType>(dtype), Shape(rank)};
    for (int64_t& d : t.shape) {
      if (!(in >> d) || d < 0) fail();
    }
    c.types.push_back(std::move(t));
  }
  if (in.get() != '\n') fail();
  c.format = encoded.substr(static_cast<size_t>(in.tellg()));
  return c;
}

std::string format_print(const PrintCall& call, const void* const* operands) {
  std::vector<std::string> fields;
  for (size_t i = 0; i < call.types.size(); ++i) {
    const TensorType& t = call.types[i];
    Array a = Array::empty(t.dtype, t.shape);
    size_t n = static_cast<size_t>(t.numel() * dtype_size(t.dtype));
    if (n) std::memcpy(a.mutable_data(), operands[i], n);
    fields.push_back(a.values_str());
  }
  return ir::fill_format(call.format, fields);
}

void emit_print(const std::string& line) {
  PrintHandler h;
  {
    std::lock_guard<std::mutex> lock(handler_mutex());
    h = handler();
  }
  if (h) {
    h(line);
    return;
  }
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

}  // namespace runtime
}  // namespace fluxion
