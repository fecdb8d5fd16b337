// The samples' training curves: round tick labels, a legend clear of the lines, and a language
// model's plot without an accuracy axis.
#include "common/curves.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string plot(const std::vector<samples::EpochRecord>& rows, const std::string& name) {
  std::string path = (std::filesystem::temp_directory_path() / name).string();
  samples::write_svg(path, "title", rows);
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::filesystem::remove(path);
  return s.str();
}

std::vector<std::string> labels(const std::string& svg, const std::string& anchor) {
  std::vector<std::string> out;
  std::regex label("<text x=\"[0-9.]+\" y=\"[0-9.]+\"" + anchor + ">([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), label); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

// The smallest y of any point of the curves (SVG's y grows downwards).
double highest_point(const std::string& svg) {
  double highest = 1e9;
  std::regex circle("cy=\"([0-9.]+)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), circle); it != std::sregex_iterator(); ++it)
    highest = std::min(highest, std::stod((*it)[1]));
  return highest;
}

TEST(Curves, TickLabelsAreRoundAndTheLegendIsClearOfTheLines) {
  std::vector<samples::EpochRecord> rows = {
      {1, 0.718, 0.61, 0.79, 1}, {2, 0.538, 0.52, 0.83, 1}, {3, 0.47, 0.5, 0.85, 1}};
  std::string svg = plot(rows, "fluxion_curves_classifier.svg");
  EXPECT_EQ(labels(svg, " text-anchor=\"end\""), (std::vector<std::string>{"0.0", "0.2", "0.4", "0.6", "0.8"}));
  EXPECT_EQ(labels(svg, " text-anchor=\"middle\""), (std::vector<std::string>{"1", "2", "3", "epoch"}));
  EXPECT_NE(svg.find(">0.6</text>"), std::string::npos);  // the accuracy axis
  EXPECT_NE(svg.find("test accuracy (right axis)"), std::string::npos);
  // Every legend entry sits above the plot, whose top no point rises past.
  std::regex legend_text("<text x=\"[0-9.]+\" y=\"([0-9.]+)\">(train loss|test loss|test accuracy)");
  int entries = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), legend_text); it != std::sregex_iterator(); ++it) {
    EXPECT_LT(std::stod((*it)[1]), 56.0);
    ++entries;
  }
  EXPECT_EQ(entries, 3);
  EXPECT_GE(highest_point(svg), 60.0);
}

TEST(Curves, ALanguageModelHasNoAccuracyAxisAndEpochLabelsStayFew) {
  std::vector<samples::EpochRecord> rows;
  for (int e = 1; e <= 30; ++e) rows.push_back({e, 3.0 / e + 1.2, 2.0 / e + 1.9, -1, 1});
  std::string svg = plot(rows, "fluxion_curves_language_model.svg");
  EXPECT_EQ(svg.find("accuracy"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">validation loss</text>"), std::string::npos);
  // Left axis up to 4.2 in steps of 1: 0, 1, 2, 3, 4, 5.
  EXPECT_EQ(labels(svg, " text-anchor=\"end\""), (std::vector<std::string>{"0", "1", "2", "3", "4", "5"}));
  std::vector<std::string> middle = labels(svg, " text-anchor=\"middle\"");
  EXPECT_EQ(middle, (std::vector<std::string>{"5", "10", "15", "20", "25", "30", "epoch"}));
}

}  // namespace
