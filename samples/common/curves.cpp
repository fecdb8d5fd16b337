#include "common/curves.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

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
  const double W = 640, H = 400, left = 60, right = 60, top = 40, bottom = 50;
  const double pw = W - left - right, ph = H - top - bottom;
  double max_loss = 1e-9;
  for (const EpochRecord& r : rows) max_loss = std::max({max_loss, r.train_loss, r.test_loss});
  int n = static_cast<int>(rows.size());
  auto x_of = [&](int i) { return left + (n > 1 ? pw * i / (n - 1) : pw / 2); };
  auto y_loss = [&](double v) { return top + ph * (1 - v / max_loss); };
  auto y_acc = [&](double v) { return top + ph * (1 - v); };
  auto polyline = [&](auto value, auto y, const char* color) {
    std::string pts, dots;
    for (int i = 0; i < n; ++i) {
      double v = value(rows[static_cast<size_t>(i)]);
      if (v < 0) continue;
      pts += fmt("%.1f,", x_of(i)) + fmt("%.1f ", y(v));
      dots += "<circle cx=\"" + fmt("%.1f", x_of(i)) + "\" cy=\"" + fmt("%.1f", y(v)) + "\" r=\"3\" fill=\"" + color + "\"/>";
    }
    return "<polyline fill=\"none\" stroke=\"" + std::string(color) + "\" stroke-width=\"2\" points=\"" + pts + "\"/>" + dots + "\n";
  };
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"400\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"320\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" + title + "</text>\n";
  s += "<rect x=\"" + fmt("%.0f", left) + "\" y=\"" + fmt("%.0f", top) + "\" width=\"" + fmt("%.0f", pw) + "\" height=\"" +
       fmt("%.0f", ph) + "\" fill=\"none\" stroke=\"#888\"/>\n";
  for (int k = 0; k <= 4; ++k) {  // gridlines with both axes' labels
    double f = k / 4.0, y = top + ph * (1 - f);
    s += "<line x1=\"" + fmt("%.0f", left) + "\" x2=\"" + fmt("%.0f", left + pw) + "\" y1=\"" + fmt("%.1f", y) + "\" y2=\"" +
         fmt("%.1f", y) + "\" stroke=\"#eee\"/>";
    s += "<text x=\"" + fmt("%.0f", left - 6) + "\" y=\"" + fmt("%.1f", y + 4) + "\" text-anchor=\"end\">" +
         fmt("%.3g", max_loss * f) + "</text>";
    s += "<text x=\"" + fmt("%.0f", left + pw + 6) + "\" y=\"" + fmt("%.1f", y + 4) + "\">" + fmt("%.2f", f) + "</text>\n";
  }
  for (int i = 0; i < n; ++i)
    s += "<text x=\"" + fmt("%.1f", x_of(i)) + "\" y=\"" + fmt("%.0f", top + ph + 16) + "\" text-anchor=\"middle\">" +
         std::to_string(rows[static_cast<size_t>(i)].epoch) + "</text>";
  s += "<text x=\"320\" y=\"" + fmt("%.0f", H - 12) + "\" text-anchor=\"middle\">epoch</text>\n";
  s += polyline([](const EpochRecord& r) { return r.train_loss; }, y_loss, "#1f77b4");
  s += polyline([](const EpochRecord& r) { return r.test_loss; }, y_loss, "#ff7f0e");
  s += polyline([](const EpochRecord& r) { return r.test_accuracy; }, y_acc, "#2ca02c");
  s += "<text x=\"70\" y=\"56\" fill=\"#1f77b4\">train loss</text><text x=\"150\" y=\"56\" fill=\"#ff7f0e\">test loss</text>"
       "<text x=\"220\" y=\"56\" fill=\"#2ca02c\">test accuracy (right axis)</text>\n</svg>\n";
  write_atomically(path, s);
}

}  // namespace samples
