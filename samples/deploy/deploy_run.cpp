// Runs the programs deploy_export saved, linked against the runtime-only library
// (fluxion::runtime: no LLVM, no glslang, no SPIRV-Tools): W6's LSTM training step once, then
// the MLP's training step for as many steps as deploy_export ran and its classifier; each
// result is checked bitwise against the one deploy_export computed in its own process. Programs
// are .fxa artifacts, data and expected results safetensors files.
//
//   deploy_run [DIR]
#include <fluxion/compiled.h>
#include <fluxion/error.h>
#include <fluxion/runtime.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "arrays_file.h"
#include "mlp.h"

namespace fx = fluxion;

namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

int run(const std::string& dir) {
  auto start = std::chrono::steady_clock::now();
  fx::Compiled lstm = fx::load(dir + "/lstm_step.fxa");
  double loaded_ms = ms_since(start);
  std::map<std::string, fx::Array> expected = deploy::read_arrays(dir + "/expected.safetensors");
  std::vector<fx::Array> in;
  for (size_t i = 0; i < lstm.input_types().size(); ++i) in.push_back(expected.at("lstm_in" + std::to_string(i)));
  auto call = std::chrono::steady_clock::now();
  std::vector<fx::Array> out = lstm.run(in);
  double first_ms = ms_since(call), total_ms = ms_since(start);
  call = std::chrono::steady_clock::now();
  lstm.run(in);
  double second_ms = ms_since(call);
  bool same = true;
  for (size_t i = 0; i < out.size(); ++i)
    same = same && deploy::bitwise_equal(out[i], expected.at("lstm_out" + std::to_string(i)));
  fx::RuntimeCounters c = fx::counters();
  std::printf(
      "W6 LSTM step: loaded in %.2f ms, first call %.2f ms, first result %.2f ms after start (second call %.2f ms); "
      "traces %llu, compiles %llu; bitwise equal to the exporting process: %s\n",
      loaded_ms, first_ms, total_ms, second_ms, static_cast<unsigned long long>(c.traces),
      static_cast<unsigned long long>(c.compiles), same ? "yes" : "NO");

  auto mlp_start = std::chrono::steady_clock::now();
  fx::Compiled step = fx::load(dir + "/mlp_step.fxa"), classify = fx::load(dir + "/mlp_classify.fxa");
  std::map<std::string, fx::Array> data = deploy::read_arrays(dir + "/mlp_data.safetensors");
  auto steps = static_cast<int64_t>(expected.at("steps").to_doubles()[0]);
  deploy::train(step, data, 0, 1);
  std::printf("MLP: programs and data loaded and the first training step run in %.2f ms\n", ms_since(mlp_start));
  double loss = deploy::train(step, data, 1, steps - 1);
  for (const std::string& p : deploy::kParameters) same = same && deploy::bitwise_equal(data.at(p), expected.at(p));
  std::printf(
      "MLP on %s: %lld steps: loss %.6f, test accuracy %.4f; parameters bitwise equal to the exporting process: %s\n",
      fx::backend_name(step.backend()), static_cast<long long>(steps), loss, deploy::accuracy(classify, data),
      same ? "yes" : "NO");
  return same && fx::counters().traces == 0 && fx::counters().compiles == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string dir = argc > 1 ? argv[1] : "deploy";
    if (dir == "--help" || dir == "-h" || argc > 2) {
      std::printf("usage: deploy_run [DIR]\n  runs the programs deploy_export --out DIR wrote (default DIR: deploy)\n");
      return argc > 2 ? 2 : 0;
    }
    if (!std::filesystem::is_directory(dir)) {
      std::fprintf(stderr, "deploy_run: error: no directory '%s' (run deploy_export --out %s first)\n", dir.c_str(),
                   dir.c_str());
      return 1;
    }
    return run(dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "deploy_run: error: %s\n", e.what());
    return 1;
  }
}
