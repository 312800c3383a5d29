// Tests for delimited text reading: delimiters, headers, CRLF, blank lines, column errors, RFC
// 4180 quoting, byte-order marks and comment lines, and lines over the limit refused while
// reading.
#include "trainer/delimited_reader.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <thread>

#include "tests/test_util.h"

namespace ember::trainer {
namespace {

using Rows = std::vector<std::vector<std::string>>;

std::string WriteFile(const testing::TempDir& dir, const std::string& name,
                      const std::string& text) {
  const std::string path = dir.path() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

DelimitedOptions CsvWithHeader() {
  DelimitedOptions options;
  options.delimiter = ",";
  options.header = true;
  return options;
}

TEST(DelimitedReaderTest, ReadsTabSeparatedRowsWithLineNumbers) {
  testing::TempDir dir;
  const std::string path =
      WriteFile(dir, "u.data", "196\t242\t3\t881250949\n\n186\t302\t3\t8917\n");
  Result<DelimitedTable> table = ReadDelimited(path, DelimitedOptions{});
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_TRUE(table->header.empty());
  EXPECT_EQ(table->rows, (Rows{{"196", "242", "3", "881250949"}, {"186", "302", "3", "8917"}}));
  EXPECT_EQ(table->line_numbers, (std::vector<size_t>{1, 3}));
}

TEST(DelimitedReaderTest, SplitsOnAMultiCharacterDelimiter) {
  testing::TempDir dir;
  // No newline after the last line.
  const std::string path =
      WriteFile(dir, "ratings.dat", "1::1193::5::978300760\n1::661::3::978302109");
  DelimitedOptions options;
  options.delimiter = "::";
  Result<DelimitedTable> table = ReadDelimited(path, options);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->rows,
            (Rows{{"1", "1193", "5", "978300760"}, {"1", "661", "3", "978302109"}}));
}

TEST(DelimitedReaderTest, CommaWithHeaderCrlfAndEmptyFields) {
  testing::TempDir dir;
  const std::string path = WriteFile(dir, "ratings.csv",
                                     "userId,movieId,rating,timestamp\r\n"
                                     "1,31,2.5,1260759144\r\n"
                                     "\r\n"
                                     "2,,4,\r\n");
  Result<DelimitedTable> table = ReadDelimited(path, CsvWithHeader());
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->header, (std::vector<std::string>{"userId", "movieId", "rating", "timestamp"}));
  EXPECT_EQ(table->rows, (Rows{{"1", "31", "2.5", "1260759144"}, {"2", "", "4", ""}}));
  EXPECT_EQ(table->line_numbers, (std::vector<size_t>{2, 4}));

  Result<size_t> rating = ResolveColumn(*table, ColumnRef("rating"), "rating column");
  ASSERT_TRUE(rating.ok()) << rating.status().ToString();
  EXPECT_EQ(*rating, 2u);
  Result<size_t> by_index = ResolveColumn(*table, ColumnRef(3), "timestamp column");
  ASSERT_TRUE(by_index.ok());
  EXPECT_EQ(*by_index, 3u);
}

TEST(DelimitedReaderTest, UnknownColumnNameErrorNamesFileColumnAndHeader) {
  testing::TempDir dir;
  const std::string path = WriteFile(dir, "r.csv", "userId,movieId\n1,2\n");
  Result<DelimitedTable> table = ReadDelimited(path, DelimitedOptions{",", true});
  ASSERT_TRUE(table.ok());
  Result<size_t> column = ResolveColumn(*table, ColumnRef("rating"), "rating column");
  ASSERT_FALSE(column.ok());
  const std::string message(column.status().message());
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("'rating'"), std::string::npos) << message;
  EXPECT_NE(message.find("'movieId'"), std::string::npos) << message;

  Result<size_t> out_of_range = ResolveColumn(*table, ColumnRef(5), "rating column");
  EXPECT_FALSE(out_of_range.ok());
}

TEST(DelimitedReaderTest, NameWithoutHeaderAndShortRowsAreErrors) {
  testing::TempDir dir;
  const std::string path = WriteFile(dir, "short.tsv", "1\t2\t3\n4\t5\n");
  Result<DelimitedTable> table = ReadDelimited(path, DelimitedOptions{});
  ASSERT_TRUE(table.ok());
  EXPECT_FALSE(ResolveColumn(*table, ColumnRef("rating"), "rating column").ok());
  Result<size_t> column = ResolveColumn(*table, ColumnRef(2), "rating column");
  ASSERT_FALSE(column.ok());
  const std::string message(column.status().message());
  EXPECT_NE(message.find("line 2"), std::string::npos) << message;
  EXPECT_NE(message.find("rating column"), std::string::npos) << message;
}

TEST(DelimitedReaderTest, StreamingReaderReportsFieldsAndMissingFieldLines) {
  testing::TempDir dir;
  const std::string path = WriteFile(dir, "s.tsv", "a\tb\n\nc\n");
  Result<std::unique_ptr<DelimitedReader>> reader = DelimitedReader::Open(path, {});
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE((*reader)->Next().value());
  EXPECT_EQ((*reader)->fields().size(), 2u);
  EXPECT_EQ((*reader)->Field(1, "item").value(), "b");
  ASSERT_TRUE((*reader)->Next().value());
  EXPECT_EQ((*reader)->line_number(), 3u);
  Result<std::string_view> missing = (*reader)->Field(1, "item");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("line 3"), std::string_view::npos);
  EXPECT_FALSE((*reader)->Next().value());
}

TEST(DelimitedReaderTest, ALineOverTheLimitIsRefusedBeforeItIsReadWhole) {
  // A pipe fed one endless line: the reader must stop reading just past the limit, so the
  // writer gets no further than that plus what the pipe and the stream buffer hold.
  testing::TempDir dir;
  const std::string fifo = dir.path() + "/endless";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::signal(SIGPIPE, SIG_IGN);
  constexpr size_t kBound = 8 * kMaxRecordBytes;  // the writer's own bound
  std::atomic<size_t> written{0};
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    if (fd < 0) return;
    const std::string chunk(1 << 16, 'x');
    while (written < kBound) {
      const ssize_t n = ::write(fd, chunk.data(), chunk.size());
      if (n <= 0) break;  // the reader closed the pipe
      written += static_cast<size_t>(n);
    }
    ::close(fd);
  });
  {
    auto reader = DelimitedReader::Open(fifo, {});
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    Result<bool> next = (*reader)->Next();
    ASSERT_FALSE(next.ok());
    EXPECT_NE(next.status().message().find("line 1"), std::string::npos)
        << next.status().ToString();
    EXPECT_NE(next.status().message().find(std::to_string(kMaxRecordBytes)), std::string::npos);
  }  // closed: the writer stops
  writer.join();
  EXPECT_LT(written.load(), 2 * kMaxRecordBytes);
}

TEST(DelimitedReaderTest, MissingFileErrorNamesThePath) {
  Result<DelimitedTable> table = ReadDelimited("/nonexistent/ember/u.data", DelimitedOptions{});
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), StatusCode::kNotFound);
  EXPECT_NE(table.status().message().find("/nonexistent/ember/u.data"), std::string_view::npos);
}

TEST(DelimitedReaderTest, QuotedFieldsHoldDelimitersDoubledQuotesAndLineBreaks) {
  testing::TempDir dir;
  const std::string path = WriteFile(dir, "movies.csv",
                                     "\xEF\xBB\xBFmovieId,title,genres\r\n"
                                     "1,\"Toy Story, Part \"\"One\"\"\",Comedy\r\n"
                                     "2,\"Two\r\nlines\",\"\"\r\n"
                                     "3,plain \"inner\" quote,\n"
                                     "4,\"last\"\n");
  Result<DelimitedTable> table = ReadDelimited(path, CsvWithHeader());
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  // The byte-order mark is not part of the first column's name.
  EXPECT_EQ(table->header, (std::vector<std::string>{"movieId", "title", "genres"}));
  EXPECT_EQ(table->rows, (Rows{{"1", "Toy Story, Part \"One\"", "Comedy"},
                               {"2", "Two\nlines", ""},
                               {"3", "plain \"inner\" quote", ""},
                               {"4", "last"}}));
  // A record is numbered by its first line.
  EXPECT_EQ(table->line_numbers, (std::vector<size_t>{2, 3, 5, 6}));
}

TEST(DelimitedReaderTest, QuotingCanBeTurnedOffAndCommentLinesSkipped) {
  testing::TempDir dir;
  const std::string path =
      WriteFile(dir, "u.data", "# user item\n\"1\"\t\"a\tb\"\n  \n#2\t3\n4\t5\n");
  DelimitedOptions options;
  options.quote = '\0';
  options.comment = "#";
  Result<DelimitedTable> table = ReadDelimited(path, options);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->rows, (Rows{{"\"1\"", "\"a", "b\""}, {"4", "5"}}));
  EXPECT_EQ(table->line_numbers, (std::vector<size_t>{2, 5}));
}

TEST(DelimitedReaderTest, BadQuotingIsRefusedNamingFileLineAndColumn) {
  testing::TempDir dir;
  DelimitedOptions options;
  options.delimiter = ",";
  const std::string unclosed = WriteFile(dir, "unclosed.csv", "1,2\n3,\"open\n4,5\n");
  Result<DelimitedTable> table = ReadDelimited(unclosed, options);
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(table.status().message().find(unclosed + " line 2, column 1: a quoted field is not "
                                          "closed before the end of the file"),
            std::string::npos)
      << table.status().ToString();
  const std::string trailing = WriteFile(dir, "trailing.csv", "1,2\n3,\"x\"y,4\n");
  table = ReadDelimited(trailing, options);
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.status().message().find(trailing + " line 2, column 1: text after the closing "
                                          "quote"),
            std::string::npos)
      << table.status().ToString();
}

}  // namespace
}  // namespace ember::trainer
