// A one-line progress bar for an epoch: batches done, examples per second, running loss.
// On a terminal it redraws in place (at most ten times a second); into a file or pipe it
// writes the finished line only, so logs stay readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace samples {

class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total);
  // Whether update() would draw now (so a caller can skip computing the running loss).
  bool due() const;
  // `done` batches of `total`, `examples` seen so far, the mean loss so far.
  void update(int64_t done, int64_t examples, double running_loss);
  // Draws the final state and ends the line.
  void finish(int64_t examples, double running_loss);
  double seconds() const;

 private:
  void draw(int64_t done, int64_t examples, double running_loss);
  std::string label_;
  int64_t total_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace samples
