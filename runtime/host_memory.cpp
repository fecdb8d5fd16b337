#include "runtime/host_memory.h"

#include <new>

#include "fluxion/error.h"
#include "support/settings.h"

namespace fluxion::runtime {

int64_t host_memory_limit() { return support::whole_number(support::Setting::memory_limit).value_or(-1); }

std::string program_label(const ir::Program& p) {
  auto list = [](const std::vector<TensorType>& ts) {
    std::string s;
    for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + ts[i].str();
    return s;
  };
  return "program @" + p.name + "(" + list(p.body.param_types()) + ") -> (" + list(p.body.result_types()) + ")" +
         traced_from(p);
}

std::string traced_from(const ir::Program& p) {
  for (auto it = p.body.nodes.rbegin(); it != p.body.nodes.rend(); ++it) {
    if (it->line != 0) return " (traced from " + std::string(it->file) + ":" + std::to_string(it->line) + ")";
  }
  return "";
}

int64_t host_bytes(const std::vector<TensorType>& types) {
  int64_t n = 0;
  for (const TensorType& t : types) n += t.numel() * dtype_size(t.dtype);
  return n;
}

void check_host_memory(const std::string& label, int64_t results, int64_t working, const std::string& working_what) {
  int64_t limit = host_memory_limit();
  if (limit < 0 || results + working <= limit) return;
  detail::fail("call", label + " would allocate " + std::to_string(results + working) + " bytes of host memory (" +
                           std::to_string(results) + " for its results, " + std::to_string(working) + " for its " +
                           working_what + "), over FLUXION_MEMORY_LIMIT=" + std::to_string(limit));
}

void check_host_memory(const ir::Program& p, int64_t results, int64_t working, const std::string& working_what) {
  int64_t limit = host_memory_limit();
  if (limit >= 0 && results + working > limit) check_host_memory(program_label(p), results, working, working_what);
}

void fail_allocation(const std::string& label, const std::string& what, int64_t bytes) {
  detail::fail("call", "out of memory: cannot allocate " + std::to_string(bytes) + " bytes of host memory for " + what +
                           " of " + label);
}

void fail_allocation(const ir::Program& p, const std::string& what, int64_t bytes) {
  fail_allocation(program_label(p), what, bytes);
}

std::vector<Array> allocate_results(const ir::Program& p, const std::vector<TensorType>& types) {
  return allocate_results(program_label(p), types);
}

std::vector<Array> allocate_results(const std::string& label, const std::vector<TensorType>& types) {
  std::vector<Array> out;
  out.reserve(types.size());
  for (size_t k = 0; k < types.size(); ++k) {
    try {
      out.push_back(Array::empty(types[k].dtype, types[k].shape));
    } catch (const std::bad_alloc&) {
      fail_allocation(label, "result " + std::to_string(k) + " (" + types[k].str() + ")", host_bytes({types[k]}));
    }
  }
  return out;
}

}  // namespace fluxion::runtime
