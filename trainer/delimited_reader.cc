// Delimited text reading.
#include "trainer/delimited_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ember::trainer {

std::string ColumnRef::Label() const {
  if (!name.empty()) return "'" + name + "'";
  return std::to_string(index);
}

void SplitFields(std::string_view line, std::string_view delimiter,
                 std::vector<std::string_view>* fields) {
  fields->clear();
  size_t start = 0;
  while (true) {
    const size_t end = line.find(delimiter, start);
    if (end == std::string_view::npos) {
      fields->push_back(line.substr(start));
      return;
    }
    fields->push_back(line.substr(start, end - start));
    start = end + delimiter.size();
  }
}

DelimitedReader::DelimitedReader(std::string path, DelimitedOptions options)
    : path_(std::move(path)), options_(std::move(options)) {}

Result<std::unique_ptr<DelimitedReader>> DelimitedReader::Open(const std::string& path,
                                                               const DelimitedOptions& options) {
  if (options.delimiter.empty()) {
    return InvalidArgument("reading '" + path + "': the delimiter is empty");
  }
  std::unique_ptr<DelimitedReader> reader(new DelimitedReader(path, options));
  reader->in_.open(path, std::ios::binary);
  if (!reader->in_) {
    return NotFound("cannot open data file '" + path + "': " + std::strerror(errno));
  }
  if (options.header) {
    ASSIGN_OR_RETURN(const bool has_header, reader->ReadRecord());
    if (has_header) {
      for (std::string_view name : reader->fields_) reader->header_.emplace_back(name);
    }
  }
  if (reader->in_.bad()) return DataLoss("error reading '" + path + "'");
  return reader;
}

std::string DelimitedReader::Where(size_t line, size_t column) const {
  return path_ + " line " + std::to_string(line) + ", column " + std::to_string(column);
}

bool DelimitedReader::ReadPhysicalLine() {
  // Stored up to one byte past the limit, then no further: however long a line is, memory stays
  // within the limit, and ReadRecord refuses the line.
  using Traits = std::char_traits<char>;
  std::streambuf& in = *in_.rdbuf();
  line_.clear();
  int c = in.sbumpc();
  if (c == Traits::eof()) {
    in_.setstate(std::ios::eofbit);
    return false;
  }
  while (c != Traits::eof() && c != '\n' && line_.size() <= kMaxRecordBytes) {
    line_.push_back(static_cast<char>(c));
    c = in.sbumpc();
  }
  ++physical_line_;
  constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
  if (physical_line_ == 1 && line_.starts_with(kByteOrderMark)) line_.erase(0, kByteOrderMark.size());
  if (!line_.empty() && line_.back() == '\r') line_.pop_back();
  return true;
}

Result<bool> DelimitedReader::ReadRecord() {
  while (ReadPhysicalLine()) {
    if (line_.find_first_not_of(" \t") == std::string::npos) continue;
    if (!options_.comment.empty() && line_.starts_with(options_.comment)) continue;
    line_number_ = physical_line_;
    if (line_.size() > kMaxRecordBytes) {
      return InvalidArgument(path_ + " line " + std::to_string(line_number_) + ": a line of " +
                             "more than the " + std::to_string(kMaxRecordBytes) +
                             " bytes a record may have (refused while reading)");
    }
    if (options_.quote == '\0' || line_.find(options_.quote) == std::string::npos) {
      SplitFields(line_, options_.delimiter, &fields_);
    } else {
      RETURN_IF_ERROR(SplitQuoted());
    }
    return true;
  }
  fields_.clear();
  return false;
}

Status DelimitedReader::SplitQuoted() {
  const std::string& delimiter = options_.delimiter;
  const char quote = options_.quote;
  record_.clear();
  std::vector<std::pair<size_t, size_t>> spans;  // each field's offset and size in record_
  size_t pos = 0;
  while (true) {
    const size_t column = spans.size();
    const size_t start = record_.size();
    if (pos < line_.size() && line_[pos] == quote) {
      const size_t opened_on = physical_line_;
      ++pos;
      while (true) {
        const size_t close = line_.find(quote, pos);
        if (close == std::string::npos) {
          // A line break inside the quotes: the field goes on on the next line.
          record_.append(line_, pos);
          record_.push_back('\n');
          if (!ReadPhysicalLine()) {
            return InvalidArgument(Where(opened_on, column) +
                                   ": a quoted field is not closed before the end of the file");
          }
          if (record_.size() + line_.size() > kMaxRecordBytes) {
            return InvalidArgument(Where(opened_on, column) + ": a quoted field goes on for more "
                                   "than the " + std::to_string(kMaxRecordBytes) +
                                   " bytes a record may have");
          }
          pos = 0;
          continue;
        }
        record_.append(line_, pos, close - pos);
        pos = close + 1;
        if (pos < line_.size() && line_[pos] == quote) {  // a doubled quote stands for one
          record_.push_back(quote);
          ++pos;
          continue;
        }
        break;
      }
      if (pos < line_.size() && line_.compare(pos, delimiter.size(), delimiter) != 0) {
        return InvalidArgument(Where(physical_line_, column) +
                               ": text after the closing quote of a quoted field (a quote inside "
                               "a quoted field is written twice)");
      }
    } else {
      const size_t end = std::min(line_.find(delimiter, pos), line_.size());
      record_.append(line_, pos, end - pos);
      pos = end;
    }
    spans.emplace_back(start, record_.size() - start);
    if (pos >= line_.size()) break;
    pos += delimiter.size();
    if (pos >= line_.size()) {  // the line ends with a delimiter: one more, empty field
      spans.emplace_back(record_.size(), 0);
      break;
    }
  }
  fields_.clear();
  for (const auto& [offset, size] : spans) fields_.emplace_back(record_.data() + offset, size);
  return Status::Ok();
}

Result<bool> DelimitedReader::Next() {
  ASSIGN_OR_RETURN(const bool more, ReadRecord());
  if (in_.bad()) {
    return DataLoss("error reading '" + path_ + "' after line " + std::to_string(physical_line_));
  }
  return more;
}

Result<std::string_view> DelimitedReader::Field(size_t column, std::string_view what) const {
  if (column < fields_.size()) return fields_[column];
  return InvalidArgument(Where(line_number_, column) + ": no such field (" + std::string(what) +
                         "); the line has " +
                         std::to_string(fields_.size()) + " fields split on '" +
                         options_.delimiter + "'");
}

Result<DelimitedTable> ReadDelimited(const std::string& path, const DelimitedOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<DelimitedReader> reader, DelimitedReader::Open(path, options));
  DelimitedTable table;
  table.path = path;
  table.header = reader->header();
  while (true) {
    ASSIGN_OR_RETURN(const bool more, reader->Next());
    if (!more) break;
    table.rows.emplace_back(reader->fields().begin(), reader->fields().end());
    table.line_numbers.push_back(reader->line_number());
  }
  return table;
}

Result<size_t> ResolveColumn(const std::string& path, const std::vector<std::string>& header,
                             const ColumnRef& column, std::string_view what) {
  const std::string context = path + ": " + std::string(what) + " ";
  if (!column.name.empty()) {
    if (header.empty()) {
      return InvalidArgument(context + column.Label() +
                             " is given by name but the file is read without a header line "
                             "(set header: true or give a 0-based column number)");
    }
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == column.name) return i;
    }
    std::string known;
    for (const std::string& name : header) {
    if (!known.empty()) known += ", ";
    known += "'" + name + "'";
  }
    return InvalidArgument(context + column.Label() + " is not in the header (" + known + ")");
  }
  if (column.index < 0) return InvalidArgument(context + "is not set");
  const size_t index = static_cast<size_t>(column.index);
  if (!header.empty() && index >= header.size()) {
    return InvalidArgument(context + std::to_string(index) + " is out of range: the header has " +
                           std::to_string(header.size()) + " columns");
  }
  return index;
}

Result<size_t> ResolveColumn(const DelimitedTable& table, const ColumnRef& column,
                             std::string_view what) {
  ASSIGN_OR_RETURN(const size_t index, ResolveColumn(table.path, table.header, column, what));
  for (size_t r = 0; r < table.rows.size(); ++r) {
    if (index >= table.rows[r].size()) {
      return InvalidArgument(table.path + " line " + std::to_string(table.line_numbers[r]) +
                             ", column " + std::to_string(index) + ": no such field (" +
                             std::string(what) +
                             " " + column.Label() + "); the line has " +
                             std::to_string(table.rows[r].size()) + " fields");
    }
  }
  return index;
}

}  // namespace ember::trainer
