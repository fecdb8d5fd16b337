#include "common/curves.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <utility>

namespace samples {

namespace {

void write_atomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// A tick step of 1, 2, 2.5 or 5 times a power of ten giving at most `ticks` steps over span,
// and the decimals its labels need.
struct Ticks {
  double step;
  int decimals;
};
Ticks round_ticks(double span, int ticks) {
  double raw = span / ticks;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * magnitude >= raw * (1 - 1e-9)) {
      double step = m * magnitude;
      int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)) + (m == 2.5 ? 1 : 0));
      return {step, decimals};
    }
  }
  return {10 * magnitude, 0};
}

std::string text(double x, double y, const std::string& body, const char* attributes = "") {
  return "<text x=\"" + fmt("%.1f", x) + "\" y=\"" + fmt("%.1f", y) + "\"" + attributes + ">" + body + "</text>";
}

}  // namespace

void write_csv(const std::string& path, const std::vector<EpochRecord>& rows) {
  std::string s = "epoch,train_loss,test_loss,test_accuracy,seconds\n";
  for (const EpochRecord& r : rows) {
    s += std::to_string(r.epoch) + "," + fmt("%.6f", r.train_loss) + "," + fmt("%.6f", r.test_loss) + "," +
         (r.test_accuracy >= 0 ? fmt("%.4f", r.test_accuracy) : std::string()) + "," + fmt("%.3f", r.seconds) + "\n";
  }
  write_atomically(path, s);
}

std::vector<EpochRecord> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::vector<EpochRecord> rows;
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    EpochRecord r;
    char accuracy[32] = "";
    // An empty accuracy (a language model) leaves the field unread and the record's -1.
    int n = std::sscanf(line.c_str(), "%d,%lf,%lf,%31[^,],%lf", &r.epoch, &r.train_loss, &r.test_loss, accuracy,
                        &r.seconds);
    if (n == 5) r.test_accuracy = std::atof(accuracy);
    else if (n != 3 || std::sscanf(line.c_str(), "%*d,%*f,%*f,,%lf", &r.seconds) != 1) continue;
    rows.push_back(r);
  }
  return rows;
}

void write_svg(const std::string& path, const std::string& title, const std::vector<EpochRecord>& rows) {
  // The legend sits in its own band between the title and the plot, so no line crosses it.
  const double W = 640, H = 400, left = 60, right = 60, top = 60, bottom = 50;
  const double pw = W - left - right, ph = H - top - bottom;
  bool has_accuracy = std::any_of(rows.begin(), rows.end(), [](const EpochRecord& r) { return r.test_accuracy >= 0; });
  double max_loss = 1e-9;
  for (const EpochRecord& r : rows) max_loss = std::max({max_loss, r.train_loss, r.test_loss});
  Ticks loss_ticks = round_ticks(max_loss, 5);
  double loss_top = std::ceil(max_loss / loss_ticks.step - 1e-9) * loss_ticks.step;
  int first = rows.empty() ? 1 : rows.front().epoch, last = rows.empty() ? 1 : rows.back().epoch;
  auto x_of = [&](double epoch) { return left + (last > first ? pw * (epoch - first) / (last - first) : pw / 2); };
  auto y_loss = [&](double v) { return top + ph * (1 - v / loss_top); };
  auto y_acc = [&](double v) { return top + ph * (1 - v); };
  auto polyline = [&](auto value, auto y, const char* color) {
    std::string pts, dots;
    for (const EpochRecord& r : rows) {
      double v = value(r);
      if (v < 0) continue;
      pts += fmt("%.1f,", x_of(r.epoch)) + fmt("%.1f ", y(v));
      dots += "<circle cx=\"" + fmt("%.1f", x_of(r.epoch)) + "\" cy=\"" + fmt("%.1f", y(v)) + "\" r=\"3\" fill=\"" +
              color + "\"/>";
    }
    return "<polyline fill=\"none\" stroke=\"" + std::string(color) + "\" stroke-width=\"2\" points=\"" + pts + "\"/>" +
           dots + "\n";
  };
  std::string s =
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"400\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += text(W / 2, 22, title, " text-anchor=\"middle\" font-size=\"15\"") + "\n";
  s += "<rect x=\"" + fmt("%.0f", left) + "\" y=\"" + fmt("%.0f", top) + "\" width=\"" + fmt("%.0f", pw) + "\" height=\"" +
       fmt("%.0f", ph) + "\" fill=\"none\" stroke=\"#888\"/>\n";
  auto gridline = [&](double y) {
    return "<line x1=\"" + fmt("%.0f", left) + "\" x2=\"" + fmt("%.0f", left + pw) + "\" y1=\"" + fmt("%.1f", y) +
           "\" y2=\"" + fmt("%.1f", y) + "\" stroke=\"#eee\"/>";
  };
  for (int k = 0; k * loss_ticks.step <= loss_top * (1 + 1e-9); ++k) {
    double v = k * loss_ticks.step;
    s += gridline(y_loss(v)) +
         text(left - 6, y_loss(v) + 4, fmt(("%." + std::to_string(loss_ticks.decimals) + "f").c_str(), v),
              " text-anchor=\"end\"") +
         "\n";
  }
  if (has_accuracy) {
    for (int k = 0; k <= 5; ++k) s += text(left + pw + 6, y_acc(k / 5.0) + 4, fmt("%.1f", k / 5.0)) + "\n";
  }
  // Epoch labels at a round step, at most ten of them.
  int epoch_step = std::max(1, static_cast<int>(round_ticks(std::max(last - first, 1), 10).step));
  for (int e = (first + epoch_step - 1) / epoch_step * epoch_step; e <= last; e += epoch_step)
    s += text(x_of(e), top + ph + 16, std::to_string(e), " text-anchor=\"middle\"");
  s += text(W / 2, H - 12, "epoch", " text-anchor=\"middle\"") + "\n";
  s += polyline([](const EpochRecord& r) { return r.train_loss; }, y_loss, "#1f77b4");
  s += polyline([](const EpochRecord& r) { return r.test_loss; }, y_loss, "#ff7f0e");
  if (has_accuracy) s += polyline([](const EpochRecord& r) { return r.test_accuracy; }, y_acc, "#2ca02c");
  std::vector<std::pair<std::string, const char*>> legend = {
      {"train loss", "#1f77b4"}, {has_accuracy ? "test loss" : "validation loss", "#ff7f0e"}};
  if (has_accuracy) legend.push_back({"test accuracy (right axis)", "#2ca02c"});
  double x = left;
  for (const auto& [label, color] : legend) {
    s += "<line x1=\"" + fmt("%.0f", x) + "\" x2=\"" + fmt("%.0f", x + 18) + "\" y1=\"44\" y2=\"44\" stroke=\"" +
         color + "\" stroke-width=\"2\"/>" + text(x + 24, 48, label) + "\n";
    x += 24 + 7.0 * static_cast<double>(label.size()) + 24;
  }
  s += "</svg>\n";
  write_atomically(path, s);
}

}  // namespace samples
