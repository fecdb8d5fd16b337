#include "common/progress.h"

#include <unistd.h>

#include <cstdio>

namespace samples {

ProgressBar::ProgressBar(std::string label, int64_t total)
    : label_(std::move(label)), total_(total), tty_(::isatty(STDOUT_FILENO) != 0),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

double ProgressBar::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void ProgressBar::draw(int64_t done, int64_t examples, double running_loss) {
  constexpr int kWidth = 30;
  int filled = total_ > 0 ? static_cast<int>(kWidth * done / total_) : kWidth;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kWidth - filled), '.');
  double s = seconds();
  std::printf("\r%s [%s] %lld/%lld  %.0f ex/s  loss %.4f", label_.c_str(), bar.c_str(), static_cast<long long>(done),
              static_cast<long long>(total_), s > 0 ? static_cast<double>(examples) / s : 0.0, running_loss);
  std::fflush(stdout);
}

bool ProgressBar::due() const {
  return tty_ && std::chrono::steady_clock::now() - last_draw_ >= std::chrono::milliseconds(100);
}

void ProgressBar::update(int64_t done, int64_t examples, double running_loss) {
  if (!due()) return;
  last_draw_ = std::chrono::steady_clock::now();
  draw(done, examples, running_loss);
}

void ProgressBar::finish(int64_t examples, double running_loss) {
  draw(total_, examples, running_loss);
  std::printf("\n");
}

}  // namespace samples
