// Delimited text reading.
#include "trainer/delimited_reader.h"

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
  if (options.header && reader->ReadLine()) {
    for (std::string_view name : reader->fields_) reader->header_.emplace_back(name);
  }
  if (reader->in_.bad()) return DataLoss("error reading '" + path + "'");
  return reader;
}

bool DelimitedReader::ReadLine() {
  while (std::getline(in_, line_)) {
    ++line_number_;
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    if (line_.find_first_not_of(" \t") == std::string::npos) continue;
    SplitFields(line_, options_.delimiter, &fields_);
    return true;
  }
  fields_.clear();
  return false;
}

Result<bool> DelimitedReader::Next() {
  const bool more = ReadLine();
  if (in_.bad()) {
    return DataLoss("error reading '" + path_ + "' after line " + std::to_string(line_number_));
  }
  return more;
}

Result<std::string_view> DelimitedReader::Field(size_t column, std::string_view what) const {
  if (column < fields_.size()) return fields_[column];
  return InvalidArgument(path_ + " line " + std::to_string(line_number_) + ": no field " +
                         std::to_string(column) + " (" + std::string(what) + "); the line has " +
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
                             ": no field " + std::to_string(index) + " (" + std::string(what) +
                             " " + column.Label() + "); the line has " +
                             std::to_string(table.rows[r].size()) + " fields");
    }
  }
  return index;
}

}  // namespace ember::trainer
