// Delimited text files (TSV, CSV, MovieLens "::"): a streaming line reader, a small in-memory
// table, and columns named by position or header name, with errors that name file and line.
//
// Fields are split on an exact delimiter string. A field that starts with the quote character
// (RFC 4180, '"' by default) is quoted: it may hold the delimiter, line breaks and the quote
// itself, doubled; other fields are taken as they are. A UTF-8 byte-order mark is skipped, '\r'
// line endings are stripped, blank lines and (when asked) comment lines are skipped. Errors name
// the file, the line and the column (0-based, as configs count them).
#pragma once

#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace ember::trainer {

// A column by 0-based position (index >= 0) or by header name (name non-empty).
// Implicit from a number or a name, so `{0}`, `{"rating"}` and `{{5, 6, 7}}` read naturally.
struct ColumnRef {
  int index = -1;
  std::string name;

  ColumnRef() = default;
  ColumnRef(int column_index) : index(column_index) {}                     // NOLINT
  ColumnRef(std::string column_name) : name(std::move(column_name)) {}     // NOLINT
  ColumnRef(const char* column_name) : name(column_name) {}                // NOLINT

  bool is_set() const { return index >= 0 || !name.empty(); }
  // "'rating'" or "3", for messages and stable feature names.
  std::string Label() const;
};

struct DelimitedOptions {
  std::string delimiter = "\t";  // any non-empty string, e.g. "," or "::"
  bool header = false;           // the first non-blank line names the columns
  char quote = '"';              // starts a quoted field; '\0': no quoting
  std::string comment;           // lines starting with it are skipped; empty: none
};

// The longest record (a line, or the lines a quoted line break joins) a reader accepts.
constexpr size_t kMaxRecordBytes = size_t{16} << 20;

// Reads a delimited file one line at a time; the line's fields stay valid until the next call.
class DelimitedReader {
 public:
  // NotFound naming the path when the file cannot be opened. Reads the header when asked to.
  static Result<std::unique_ptr<DelimitedReader>> Open(const std::string& path,
                                                       const DelimitedOptions& options);

  // Moves to the next non-blank line; false at the end of the file.
  Result<bool> Next();

  std::span<const std::string_view> fields() const { return fields_; }
  // The field at `column` of the current line, or InvalidArgument naming file, line and `what`.
  Result<std::string_view> Field(size_t column, std::string_view what) const;

  size_t line_number() const { return line_number_; }  // 1-based, of the current line
  const std::string& path() const { return path_; }
  const std::vector<std::string>& header() const { return header_; }

 private:
  DelimitedReader(std::string path, DelimitedOptions options);
  // Reads the next record (skipping blank and comment lines) into fields_; false at end of file.
  Result<bool> ReadRecord();
  // Reads the next physical line into line_ (without its '\r'); false at end of file.
  bool ReadPhysicalLine();
  // Splits a record in which a quote occurs, reading more lines while a quoted field goes on;
  // the fields point into record_.
  Status SplitQuoted();
  // "<path> line <n>, column <c>", for errors.
  std::string Where(size_t line, size_t column) const;

  std::string path_;
  DelimitedOptions options_;
  std::ifstream in_;
  std::string line_;
  std::string record_;  // the unquoted fields of a quoted record, one after another
  std::vector<std::string_view> fields_;
  std::vector<std::string> header_;
  size_t line_number_ = 0;    // the current record's first line
  size_t physical_line_ = 0;  // the last line read
};

// A whole (small) file in memory.
struct DelimitedTable {
  std::string path;
  std::vector<std::string> header;              // empty without a header line
  std::vector<std::vector<std::string>> rows;   // fields of every non-blank data line
  std::vector<size_t> line_numbers;             // 1-based file line of each row
};

Result<DelimitedTable> ReadDelimited(const std::string& path, const DelimitedOptions& options);

// The 0-based index of `column` given a file's header (empty when it has none). `what` says what
// the column is for ("rating column"); errors name the file, the column and the known names.
Result<size_t> ResolveColumn(const std::string& path, const std::vector<std::string>& header,
                             const ColumnRef& column, std::string_view what);

// As above, and also checks that every row has the column (the error names the first short
// row's line).
Result<size_t> ResolveColumn(const DelimitedTable& table, const ColumnRef& column,
                             std::string_view what);

// Splits `line` on `delimiter` (non-empty) into *fields (cleared first).
void SplitFields(std::string_view line, std::string_view delimiter,
                 std::vector<std::string_view>* fields);

}  // namespace ember::trainer
