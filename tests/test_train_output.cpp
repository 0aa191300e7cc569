// minidl-train's output parts, tested directly (apps/train/progress.cpp, summary.cpp, curves.cpp
// are compiled into this test): the live bar fits any terminal width, the EPOCH line shows the
// loss scale only with a GradScaler, and the curves SVG renders (rsvg-convert) to a PNG with axes
// and data in it, for a long run and for a single epoch.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "apps/train/progress.h"
#include "apps/train/summary.h"
#include "png_reader.h"
#include "temp_dir.h"

#ifndef MINIDL_RSVG_CONVERT
#error "MINIDL_RSVG_CONVERT (rsvg-convert's path, or empty) must be defined by the build"
#endif

using namespace minidl;

TEST_CASE("the progress bar fits the terminal width", "[train_output]") {
  const std::string stats = "epoch 1/3 step 120/469  loss 0.5123  acc 81.25%  lr 0.05  51234 samples/s  eta 12s";
  for (int columns : {200, 120, 100, 80, 60, 20, 1}) {
    INFO("columns " << columns);
    const std::string bar = train::fit_bar(stats, 0.5, columns);
    CHECK(static_cast<int>(bar.size()) <= std::max(columns - 1, 1));  // never the last column: no wrap
  }
  CHECK(train::fit_bar(stats, 0.5, 200).rfind("[############............] ", 0) == 0);  // full bar, half done
  CHECK(train::fit_bar(stats, 1.0, 120).find(stats) != std::string::npos);             // the text stays whole
  CHECK(train::fit_bar(stats, 0.5, 80).rfind("epoch 1/3", 0) == 0);                    // no room: the bar goes first
  // COLUMNS is the fallback when stdout is not a terminal (as under ctest).
  ::setenv("COLUMNS", "93", 1);
  CHECK(train::terminal_columns() == 93);
  ::unsetenv("COLUMNS");
  CHECK(train::terminal_columns() == 80);
}

TEST_CASE("the EPOCH line shows the loss scale only with a GradScaler", "[train_output]") {
  train::EpochMetrics m;
  m.epoch = 1;
  m.scale = 65536;
  CHECK(train::epoch_line(m, 3, false).find("scale=") == std::string::npos);
  CHECK(train::epoch_line(m, 3, true).find("scale=65536 skipped=0") != std::string::npos);
}

namespace {
// Renders svg to PNG with rsvg-convert and reads it back.
testing::Image render(const TempDir& dir, const std::string& svg, const std::string& name) {
  const std::string rsvg = MINIDL_RSVG_CONVERT;
  REQUIRE_FALSE(rsvg.empty());  // librsvg2-bin is installed by scripts/bootstrap.sh
  FILE* f = std::fopen(dir.file(name + ".svg").c_str(), "w");
  REQUIRE(f != nullptr);
  std::fputs(svg.c_str(), f);
  std::fclose(f);
  const std::string cmd = rsvg + " -o " + dir.file(name + ".png") + " " + dir.file(name + ".svg");
  REQUIRE(std::system(cmd.c_str()) == 0);
  return testing::read_png(dir.file(name + ".png"));
}

bool dark(const uint8_t* p) { return p[0] < 110 && p[1] < 110 && p[2] < 110; }
bool near(const uint8_t* p, int r, int g, int b) {
  return std::abs(p[0] - r) < 40 && std::abs(p[1] - g) < 40 && std::abs(p[2] - b) < 40;
}

// The longest vertical and horizontal runs of dark pixels (the axes), and the pixels of a color.
struct Stats {
  int longest_column = 0, longest_row = 0, blue = 0, red = 0;
};
Stats look(const testing::Image& img) {
  Stats s;
  for (int x = 0; x < img.width; ++x) {
    int run = 0;
    for (int y = 0; y < img.height; ++y) {
      run = dark(img.at(x, y)) ? run + 1 : 0;
      s.longest_column = std::max(s.longest_column, run);
      s.blue += near(img.at(x, y), 0x1f, 0x77, 0xb4);
      s.red += near(img.at(x, y), 0xd6, 0x27, 0x28);
    }
  }
  for (int y = 0; y < img.height; ++y) {
    int run = 0;
    for (int x = 0; x < img.width; ++x) {
      run = dark(img.at(x, y)) ? run + 1 : 0;
      s.longest_row = std::max(s.longest_row, run);
    }
  }
  return s;
}

std::vector<train::EpochMetrics> epochs(int n, int steps_per_epoch) {
  std::vector<train::EpochMetrics> h;
  for (int e = 1; e <= n; ++e) {
    train::EpochMetrics m;
    m.epoch = e;
    m.train_loss = 1.0 / e;
    m.test_loss = 1.1 / e;
    m.train_accuracy = 0.6 + 0.1 * e;
    m.test_accuracy = 0.55 + 0.1 * e;
    m.end_step = e * steps_per_epoch;
    h.push_back(m);
  }
  return h;
}
}  // namespace

TEST_CASE("the curves SVG renders to a PNG with axes, ticks, labels and both panels' data", "[train_output][svg]") {
  TempDir dir;
  std::vector<train::StepLoss> steps;
  for (int s = 1; s <= 300; ++s) steps.push_back({s, 2.0 / (1 + 0.05 * s)});
  const std::string svg = train::curves_svg(epochs(3, 100), steps);
  for (const char* text : {">step<", ">epoch<", ">loss<", ">accuracy<", ">train (per step)<", ">test (epoch)<"}) {
    INFO(text);
    CHECK(svg.find(text) != std::string::npos);
  }
  const testing::Image img = render(dir, svg, "curves");
  CHECK(img.width > 500);
  const Stats s = look(img);
  CHECK(s.longest_column >= 200);  // a y axis the height of a plot area
  CHECK(s.longest_row >= 300);     // an x axis its width
  CHECK(s.blue > 300);             // the per-step loss line and the train accuracy
  CHECK(s.red > 50);               // the test series
}

TEST_CASE("a one-epoch run still draws its points", "[train_output][svg]") {
  TempDir dir;
  const testing::Image one = render(dir, train::curves_svg(epochs(1, 1), {{1, 0.7}}), "one");
  const Stats s = look(one);
  CHECK(s.longest_column >= 200);
  CHECK(s.blue > 20);  // markers, not nothing
  CHECK(s.red > 20);
  // Non-finite values (a skipped NaN batch) are left out, not drawn at infinity.
  const std::string svg = train::curves_svg(epochs(2, 3), {{1, 0.9}, {2, NAN}, {3, 0.5}});
  CHECK(svg.find("nan") == std::string::npos);
  CHECK(svg.find("inf") == std::string::npos);
}
