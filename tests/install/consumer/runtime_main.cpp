// The runtime alone: runs the program the full consumer exported, on inputs of its own.
// Usage: consumer_runtime ARTIFACT. Exits 0 only when the loaded program computes sum((2x)^2).
#include <cstdio>

#include <fluxion/compiled.h>

int main(int argc, char** argv) {
  namespace fx = fluxion;
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer_runtime ARTIFACT\n");
    return 2;
  }
  try {
    fx::Compiled program = fx::load(argv[1]);
    double got = program.run({fx::Array(std::vector<float>{1, 1, 2}, {3})})[0].item();
    std::printf("consumer_runtime: %s(x) = %g\n", program.output_names()[0].c_str(), got);
    return got == 24.0 ? 0 : 1;
  } catch (const fx::Error& e) {
    std::fprintf(stderr, "consumer_runtime: error: %s\n", e.what());
    return 1;
  }
}
