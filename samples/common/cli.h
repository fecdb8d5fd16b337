// Command-line options of the sample programs: each program registers its flags with a help
// line; --help prints them all. Every sample takes the shared training flags (add_training).
#pragma once

#include <fluxion/backend.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace samples {

// The flags every training sample takes.
struct TrainingOptions {
  std::string backend = fluxion::backend_name(fluxion::default_backend());
  int64_t epochs = 5;
  int64_t batch_size = 128;
  double lr = 1e-3;
  int64_t seed = 0;
  int64_t threads = 0;  // 0: all cores
  std::string save;     // checkpoint written after training
  std::string load;     // checkpoint read before training
  std::string csv;      // curves; default <program>_curves.csv
  std::string svg;      // plot; default <program>_curves.svg
  int64_t limit = 0;    // train on the first `limit` examples only (0: all)
  std::string optimizer = "adam";  // adam, adamw or sgd
  double momentum = 0.9;           // sgd only
  double weight_decay = 0;

  fluxion::Backend backend_kind() const;
};

class Cli {
 public:
  Cli(std::string program, std::string description) : program_(std::move(program)), description_(std::move(description)) {}
  void add(const std::string& flag, int64_t* value, const std::string& help);
  void add(const std::string& flag, double* value, const std::string& help);
  void add(const std::string& flag, std::string* value, const std::string& help);
  void add_training(TrainingOptions* o);
  // Parses argv; prints usage and exits 0 for --help, prints the problem and exits 2 for a
  // bad flag or value.
  void parse(int argc, char** argv);
  std::string usage() const;
  const std::string& program() const { return program_; }

 private:
  struct Flag {
    std::string name, help;
    std::variant<int64_t*, double*, std::string*> value;
  };
  std::string program_, description_;
  std::vector<Flag> flags_;
};

}  // namespace samples
