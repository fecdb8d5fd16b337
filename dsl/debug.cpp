// fluxion/debug.h: a print is a debug_print node (ops.def), which every backend runs in order.
#include "fluxion/debug.h"

#include <string>

#include "dsl/trace.h"

namespace fluxion::debug {

void print(Format format, const std::vector<Tensor>& values) {
  ir::Attrs attrs;
  attrs.text = std::string(format.text);
  detail::emit(ir::Op::DebugPrint, values, std::move(attrs), {}, {}, format.loc);
}

}  // namespace fluxion::debug
