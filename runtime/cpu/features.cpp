#include "runtime/cpu/features.h"

#include <algorithm>
#include <sstream>

namespace fluxion::cpu {
namespace {

struct Feature {
  const char* llvm;  // LLVM's subtarget feature name
  bool present;      // on this CPU
};

// __builtin_cpu_supports takes only string literals, hence one entry per feature.
const std::vector<Feature>& checkable() {
  static const std::vector<Feature> table = {
      {"sse3", __builtin_cpu_supports("sse3") != 0},
      {"ssse3", __builtin_cpu_supports("ssse3") != 0},
      {"sse4.1", __builtin_cpu_supports("sse4.1") != 0},
      {"sse4.2", __builtin_cpu_supports("sse4.2") != 0},
      {"popcnt", __builtin_cpu_supports("popcnt") != 0},
      {"avx", __builtin_cpu_supports("avx") != 0},
      {"avx2", __builtin_cpu_supports("avx2") != 0},
      {"fma", __builtin_cpu_supports("fma") != 0},
      {"f16c", __builtin_cpu_supports("f16c") != 0},
      {"bmi", __builtin_cpu_supports("bmi") != 0},
      {"bmi2", __builtin_cpu_supports("bmi2") != 0},
      {"lzcnt", __builtin_cpu_supports("lzcnt") != 0},
      {"movbe", __builtin_cpu_supports("movbe") != 0},
      {"adx", __builtin_cpu_supports("adx") != 0},
      {"aes", __builtin_cpu_supports("aes") != 0},
      {"pclmul", __builtin_cpu_supports("pclmul") != 0},
      {"gfni", __builtin_cpu_supports("gfni") != 0},
      {"vaes", __builtin_cpu_supports("vaes") != 0},
      {"vpclmulqdq", __builtin_cpu_supports("vpclmulqdq") != 0},
      {"avxvnni", __builtin_cpu_supports("avxvnni") != 0},
      {"avx512f", __builtin_cpu_supports("avx512f") != 0},
      {"avx512vl", __builtin_cpu_supports("avx512vl") != 0},
      {"avx512bw", __builtin_cpu_supports("avx512bw") != 0},
      {"avx512dq", __builtin_cpu_supports("avx512dq") != 0},
      {"avx512cd", __builtin_cpu_supports("avx512cd") != 0},
      {"avx512vnni", __builtin_cpu_supports("avx512vnni") != 0},
      {"avx512bf16", __builtin_cpu_supports("avx512bf16") != 0},
      {"avx512fp16", __builtin_cpu_supports("avx512fp16") != 0},
      {"avx512vbmi", __builtin_cpu_supports("avx512vbmi") != 0},
      {"avx512vbmi2", __builtin_cpu_supports("avx512vbmi2") != 0},
      {"avx512ifma", __builtin_cpu_supports("avx512ifma") != 0},
      {"avx512bitalg", __builtin_cpu_supports("avx512bitalg") != 0},
      {"avx512vpopcntdq", __builtin_cpu_supports("avx512vpopcntdq") != 0},
  };
  return table;
}

}  // namespace

std::vector<std::string> required_cpu_features(const std::string& llvm_features) {
  std::vector<std::string> out;
  std::istringstream in(llvm_features);
  for (std::string f; std::getline(in, f, ',');) {
    if (f.size() < 2 || f[0] != '+') continue;
    std::string name = f.substr(1);
    bool known = std::any_of(checkable().begin(), checkable().end(), [&](const Feature& c) { return name == c.llvm; });
    if (known) out.push_back(name);
  }
  return out;
}

std::vector<std::string> missing_cpu_features(const std::vector<std::string>& required) {
  std::vector<std::string> out;
  for (const std::string& name : required) {
    bool present = std::any_of(checkable().begin(), checkable().end(),
                               [&](const Feature& c) { return name == c.llvm && c.present; });
    if (!present) out.push_back(name);
  }
  return out;
}

}  // namespace fluxion::cpu
