// Operation: a Client's pull, lookup, push or hint: checking what it asks, and taking the rows of
// its replies.
#include "ps/client/operation.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "common/hash.h"

namespace ember::ps {
namespace {

// The part of `table`'s `keys` whose `values` floats must be keys.size() rows of its dim.
Result<Operation::Part> MakePart(const Client& client, const Operation& op,
                                 std::string_view table, std::span<const uint64_t> keys,
                                 size_t values) {
  const bool push = op.kind == Operation::Kind::kPush;
  auto spec = client.FindTable(table);
  if (!spec.ok()) return spec.status().WithContext(std::string(op.name()));
  const size_t needed = keys.size() * (*spec)->dim;
  if (op.kind != Operation::Kind::kHint && values != needed) {
    return InvalidArgument(std::string(op.name()) + (push ? " to '" : " from '") +
                           std::string(table) + "': " + std::to_string(keys.size()) +
                           " keys of dim " + std::to_string((*spec)->dim) + " need " +
                           std::to_string(needed) +
                           (push ? " gradient floats, got " : " floats of output, got ") +
                           std::to_string(values));
  }
  return Operation::Part{*spec, HashName((*spec)->name), keys, {}, 0};
}

}  // namespace

Result<std::shared_ptr<Operation>> Operation::New(const Client& client, Kind kind,
                                                  std::string_view table,
                                                  std::span<const uint64_t> keys, size_t values) {
  auto op = std::make_shared<Operation>();
  op->kind = kind;
  ASSIGN_OR_RETURN(Part part, MakePart(client, *op, table, keys, values));
  op->parts.push_back(part);
  return op;
}

Result<std::shared_ptr<Operation>> Operation::NewPull(const Client& client,
                                                      std::span<const TablePull> tables) {
  if (tables.empty() || tables.size() > wire::kMaxTablesPerPull) {
    return InvalidArgument("pull: " + std::to_string(tables.size()) + " tables; 1 to " +
                           std::to_string(wire::kMaxTablesPerPull) + " per pull");
  }
  auto op = std::make_shared<Operation>();
  op->kind = Kind::kPull;
  size_t first = 0;
  for (const TablePull& table : tables) {
    ASSIGN_OR_RETURN(Part part, MakePart(client, *op, table.table, table.keys, table.out.size()));
    part.rows = table.out;
    part.first = static_cast<uint32_t>(first);
    first += table.keys.size();
    op->parts.push_back(part);
  }
  if (first > std::numeric_limits<uint32_t>::max()) {
    return InvalidArgument("pull: " + std::to_string(first) + " keys in one pull; at most " +
                           std::to_string(std::numeric_limits<uint32_t>::max()));
  }
  return op;
}

std::string_view Operation::name() const {
  switch (kind) {
    case Kind::kPull:
      return "pull";
    case Kind::kLookup:
      return "lookup";
    case Kind::kPush:
      return "push";
    case Kind::kHint:
      return "hint";
  }
  return "operation";
}

size_t Operation::key_count() const {
  return parts.empty() ? 0 : parts.back().first + parts.back().keys.size();
}

const Operation::Part& Operation::PartAmongSeveral(uint32_t position) const {
  auto after = std::upper_bound(parts.begin(), parts.end(), position,
                                [](uint32_t p, const Part& part) { return p < part.first; });
  return *(after - 1);
}

std::string Operation::TableNames() const {
  std::string names;
  for (const Part& part : parts) names += (names.empty() ? "'" : ", '") + part.table->name + "'";
  return names;
}

Status Operation::TakeRows(uint32_t server, std::span<const uint32_t> positions,
                           const wire::ResponseBody& body) {
  std::span<const float> reply_rows;
  std::span<const uint8_t> reply_found;
  bool answered = false;
  if (kind == Kind::kPull) {
    if (auto* pulled = std::get_if<std::span<const float>>(&body)) {
      reply_rows = *pulled;
      answered = true;
    }
  } else if (auto* looked_up = std::get_if<wire::LookupRows>(&body)) {
    reply_rows = looked_up->rows;
    reply_found = looked_up->found;
    answered = true;
  }
  const size_t count = positions.empty() ? key_count() : positions.size();
  const auto position_at = [&](size_t i) {
    return positions.empty() ? static_cast<uint32_t>(i) : positions[i];
  };
  size_t floats = 0;
  for (size_t i = 0; i < count; ++i) floats += PartOf(position_at(i)).table->dim;
  const size_t flags = kind == Kind::kLookup ? count : 0;
  if (!answered || reply_rows.size() != floats || reply_found.size() != flags) {
    return DataLoss("server " + std::to_string(server) + " answered a " + std::string(name()) +
                    " of " + std::to_string(count) + " rows with " +
                    (answered ? std::to_string(reply_rows.size()) + " floats and " +
                                    std::to_string(reply_found.size()) + " found flags"
                              : std::string("another kind of reply")));
  }
  const float* source = reply_rows.data();
  for (size_t i = 0; i < count; ++i) {
    const uint32_t position = position_at(i);
    const Part& part = PartOf(position);
    const uint32_t dim = part.table->dim;
    std::memcpy(part.rows.data() + size_t{position - part.first} * dim, source,
                dim * sizeof(float));
    source += dim;
    if (!found.empty()) found[position] = reply_found[i];
  }
  return Status::Ok();
}

}  // namespace ember::ps
