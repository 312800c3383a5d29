// Operation: a Client's pull, lookup, push or hint: checking what it asks, and taking the rows of
// its replies.
#include "ps/client/operation.h"

#include <cstring>
#include <string>

namespace ember::ps {

Result<std::shared_ptr<Operation>> Operation::New(const Client& client, Kind kind,
                                                  std::string_view table,
                                                  std::span<const uint64_t> keys, size_t values) {
  auto op = std::make_shared<Operation>();
  op->kind = kind;
  const bool push = kind == Kind::kPush;
  auto spec = client.FindTable(table);
  if (!spec.ok()) return spec.status().WithContext(std::string(op->name()));
  if (kind != Kind::kHint && values != keys.size() * (*spec)->dim) {
    return InvalidArgument(
        std::string(op->name()) + (push ? " to '" : " from '") + std::string(table) +
        "': " + std::to_string(keys.size()) + " keys of dim " + std::to_string((*spec)->dim) +
        " need " + std::to_string(keys.size() * (*spec)->dim) +
        (push ? " gradient floats, got " : " floats of output, got ") + std::to_string(values));
  }
  op->table = *spec;
  op->keys = keys;
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
  const uint32_t dim = table->dim;
  const size_t count = positions.empty() ? keys.size() : positions.size();
  const size_t flags = kind == Kind::kLookup ? count : 0;
  if (!answered || reply_rows.size() != count * dim || reply_found.size() != flags) {
    return DataLoss("server " + std::to_string(server) + " answered a " + std::string(name()) +
                    " of " + std::to_string(count) + " rows with " +
                    (answered ? std::to_string(reply_rows.size()) + " floats and " +
                                    std::to_string(reply_found.size()) + " found flags"
                              : std::string("another kind of reply")));
  }
  for (size_t i = 0; i < count; ++i) {
    const uint32_t position = positions.empty() ? static_cast<uint32_t>(i) : positions[i];
    std::memcpy(rows.data() + size_t{position} * dim, reply_rows.data() + i * dim,
                dim * sizeof(float));
    if (!found.empty()) found[position] = reply_found[i];
  }
  return Status::Ok();
}

}  // namespace ember::ps
