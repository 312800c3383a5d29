// ProgressMeter's bar and plain lines, and the counts and durations they show.
#include "common/progress_meter.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <thread>

#include "common/human_format.h"
#include "tests/test_util.h"

namespace ember {
namespace {

TEST(HumanFormatTest, CountsKeepThreeSignificantDigits) {
  EXPECT_EQ(FormatCount(0), "0");
  EXPECT_EQ(FormatCount(999), "999");
  EXPECT_EQ(FormatCount(1000), "1.00k");
  EXPECT_EQ(FormatCount(12'345), "12.3k");
  EXPECT_EQ(FormatCount(999'600), "1.00M");
  EXPECT_EQ(FormatCount(1'250'000), "1.25M");
  EXPECT_EQ(FormatCount(3.1e9), "3.10G");
  EXPECT_EQ(FormatCount(100e12), "100T");
}

TEST(HumanFormatTest, Durations) {
  EXPECT_EQ(FormatDuration(42.4), "42s");
  EXPECT_EQ(FormatDuration(185), "3m05s");
  EXPECT_EQ(FormatDuration(7440), "2h04m");
  EXPECT_EQ(FormatDuration(-1), "?");
}

TEST(ProgressMeterTest, DescribesTheBarAndThePlainLine) {
  const ProgressOptions options{.label = "populating", .unit = "rows", .total = 10'000'000};
  EXPECT_EQ(ProgressMeter::Describe(options, 4'500'000, 3.0, /*bar=*/true),
            "populating [#########...........]  45%  4.50M/10.0M rows  1.50M rows/s  ETA 4s");
  EXPECT_EQ(ProgressMeter::Describe(options, 4'500'000, 3.0, /*bar=*/false),
            "populating: 45% (4.50M of 10.0M rows), 1.50M rows/s, ETA 4s");
  // Nothing done yet: no rate, so no ETA.
  EXPECT_EQ(ProgressMeter::Describe(options, 0, 3.0, false),
            "populating: 0% (0 of 10.0M rows), 0 rows/s, ETA ?");
  // An unknown total: the count and rate only.
  EXPECT_EQ(ProgressMeter::Describe({.label = "loading", .unit = "rows"}, 2000, 2.0, true),
            "loading: 2.00k rows, 1.00k rows/s");
  EXPECT_EQ(ProgressMeter::Summarize(options, 10'000'000, 8.0),
            "populating: 10.0M rows in 8s (1.25M rows/s)");
}

// Reads what a meter wrote to a file.
std::string Written(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  for (int c; (c = std::fgetc(file)) != EOF;) text.push_back(static_cast<char>(c));
  return text;
}

TEST(ProgressMeterTest, AShortPhasePrintsNothing) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    ProgressMeter meter(
        {.label = "quick", .unit = "rows", .total = 10, .out = file, .terminal = false});
    meter.Add(10);
  }
  EXPECT_EQ(Written(file), "");
  std::fclose(file);
}

TEST(ProgressMeterTest, PlainLinesComeNowAndThenThenTheClosingLine) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  ProgressMeter meter({.label = "loading",
                       .unit = "files",
                       .total = 4,
                       .out = file,
                       .terminal = false,
                       .show_after_seconds = 0.05,
                       .line_every_seconds = 0.05});
  meter.Add(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  meter.Add(3);
  meter.Finish();
  meter.Finish();  // idempotent
  const std::string text = Written(file);
  std::fclose(file);
  EXPECT_NE(text.find("loading: 25% (1 of 4 files), "), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  const size_t last_line = text.rfind('\n', text.size() - 2);
  EXPECT_EQ(text.compare(last_line + 1, 17, "loading: 4 files "), 0) << text;
}

TEST(ProgressMeterTest, OnATerminalTheBarIsRedrawnInPlace) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    ProgressMeter meter({.label = "moving",
                         .unit = "partitions",
                         .total = 2,
                         .out = file,
                         .terminal = true,
                         .show_after_seconds = 0.01,
                         .redraw_every_seconds = 0.01});
    meter.Set(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string text = Written(file);
  std::fclose(file);
  EXPECT_EQ(text.rfind("\rmoving [##########..........]  50%", 0), 0u) << text;
  EXPECT_NE(text.find("\rmoving: 1 partitions in 0s"), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
}

}  // namespace
}  // namespace ember
