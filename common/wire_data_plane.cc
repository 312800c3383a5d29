// The data plane of the wire codec: pull, lookup, push, hint, ping and stats, encoded and read.
// Pulls, lookups, pushes, hints and their replies are built in place (BuildInPlace); the rest are
// small messages (BuildMessage).
#include "common/wire_data_plane.h"

#include <cmath>
#include <cstring>
#include <iterator>
#include <vector>

#include "common/half.h"
#include "common/wire_internal.h"

namespace ember::wire {
namespace {

size_t BytesPerValue(RowFormat format) { return format == RowFormat::kF16 ? 2 : 4; }

// Row values of `format` as float32: a view into the frame, or (fp16) widened into `storage`.
Result<std::span<const float>> RowsAs(::capnp::Data::Reader data, schema::RowFormat format,
                                      FrameStorage& storage, std::string_view what) {
  if (format == schema::RowFormat::F32) return DataAs<float>(data, what);
  if (format != schema::RowFormat::F16) {
    return InvalidArgument(std::string(what) + " in unknown row format " +
                           std::to_string(static_cast<unsigned>(format)));
  }
  ASSIGN_OR_RETURN(auto halves, DataAs<uint16_t>(data, what));
  storage.widened.resize(halves.size());
  HalvesToFloats(halves.data(), halves.size(), storage.widened.data());
  return std::span<const float>(storage.widened);
}

Result<PullRequest> ReadPull(schema::PullRequest::Reader pull) {
  PullRequest out;
  const auto more = pull.getMoreTables();
  if (more.size() + 1 > kMaxTablesPerPull) {
    return InvalidArgument("a pull of " + std::to_string(more.size() + 1) +
                           " tables; at most " + std::to_string(kMaxTablesPerPull));
  }
  out.tables.reserve(more.size() + 1);
  TableKeys& first = out.tables.emplace_back();
  first.table = ToString(pull.getTable());
  ASSIGN_OR_RETURN(first.keys, DataAs<uint64_t>(pull.getKeys(), "pull keys"));
  for (auto slice : more) {
    TableKeys& next = out.tables.emplace_back();
    next.table = ToString(slice.getTable());
    ASSIGN_OR_RETURN(next.keys, DataAs<uint64_t>(slice.getKeys(), "pull keys"));
  }
  const auto format = FromSchema(pull.getRowFormat(), RowFormat::kF16);
  if (!format) return InvalidArgument("pull asks for an unknown row format");
  out.row_format = *format;
  return out;
}

Result<LookupRequest> ReadLookup(schema::LookupRequest::Reader lookup) {
  LookupRequest out;
  out.table = ToString(lookup.getTable());
  ASSIGN_OR_RETURN(out.keys, DataAs<uint64_t>(lookup.getKeys(), "lookup keys"));
  const auto format = FromSchema(lookup.getRowFormat(), RowFormat::kF16);
  if (!format) return InvalidArgument("lookup asks for an unknown row format");
  out.row_format = *format;
  const auto missing = FromSchema(lookup.getMissing(), MissingRows::kFlag);
  if (!missing) return InvalidArgument("lookup asks for an unknown treatment of missing rows");
  out.missing = *missing;
  return out;
}

Result<LookupRows> ReadLookupReply(schema::LookupReply::Reader reply, schema::RowFormat row_format,
                                   FrameStorage& storage) {
  LookupRows out;
  ASSIGN_OR_RETURN(out.rows, RowsAs(reply.getRows(), row_format, storage, "looked-up rows"));
  ASSIGN_OR_RETURN(out.found, DataAs<uint8_t>(reply.getFound(), "lookup found flags"));
  return out;
}

// A lookup or hint of keys[positions[i]] (all keys when positions is empty): `init(request)`
// starts the body, a LookupRequest or HintRequest builder, whose table, keys and (but for a hint)
// row format are set here.
template <typename InitBody>
Frame EncodeKeysRequest(const RequestHeader& header, std::string_view table,
                        std::span<const uint64_t> keys, std::span<const uint32_t> positions,
                        RowFormat row_format, InitBody&& init) {
  const size_t n = positions.empty() ? keys.size() : positions.size();
  return BuildInPlace(header, n * sizeof(uint64_t), table.size(),
                      [&](schema::Request::Builder request, FrameBuilder& builder) {
                        auto body = init(request);
                        body.setTable(TextOf(table));
                        if constexpr (requires { body.setRowFormat(schema::RowFormat::F32); }) {
                          body.setRowFormat(ToSchema<schema::RowFormat>(row_format));
                        }
                        auto* dst = reinterpret_cast<uint64_t*>(builder.InitBulk(
                            n * sizeof(uint64_t), [&](unsigned b) { return body.initKeys(b); }));
                        if (positions.empty()) {
                          if (n > 0) std::memcpy(dst, keys.data(), n * sizeof(uint64_t));
                        } else {
                          for (size_t i = 0; i < n; ++i) dst[i] = keys[positions[i]];
                        }
                      });
}

Result<PushRequest> ReadPush(schema::PushRequest::Reader push, FrameStorage& storage) {
  PushRequest out;
  out.table = ToString(push.getTable());
  ASSIGN_OR_RETURN(out.keys, DataAs<uint64_t>(push.getKeys(), "push keys"));
  ASSIGN_OR_RETURN(out.gradients, RowsAs(push.getGradients(), push.getGradientFormat(), storage,
                                         "push gradients"));
  out.clock = push.getClock();
  out.trainer = push.getTrainer();
  out.deferred = push.getDeferred();
  out.sender = PushSender{push.getSender(), push.getAckedBelow()};
  out.release_hint = push.getReleaseHint();
  out.learning_rate = push.getLearningRate();
  if (!(out.learning_rate >= 0) || !std::isfinite(out.learning_rate)) {
    return InvalidArgument("push learning rate " + std::to_string(out.learning_rate) +
                           ": must be finite and >= 0 (0: the table's)");
  }
  return out;
}

Result<HintRequest> ReadHint(schema::HintRequest::Reader hint) {
  HintRequest out;
  out.table = ToString(hint.getTable());
  ASSIGN_OR_RETURN(out.keys, DataAs<uint64_t>(hint.getKeys(), "hint keys"));
  out.hint = hint.getHint();
  out.sender = hint.getSender();
  if (out.hint == 0 || out.sender == 0) {
    return InvalidArgument("a hint needs a non-zero hint id and sender (got hint " +
                           std::to_string(out.hint) + ", sender " + std::to_string(out.sender) +
                           ")");
  }
  out.ttl_ms = hint.getTtlMs();
  return out;
}

// The figures of the stats, each once for both directions (the table's from common/table_stats.h);
// the names, the server id and the partition count are written out below.
#define EMBER_WIRE_TABLE_STAT(field, Name, ...) EMBER_WIRE_FIELD(TableStats, field, Name),
constexpr Field<TableStats, schema::TableStats, uint64_t> kTableCounters[] = {
    EMBER_TABLE_STATS(EMBER_WIRE_TABLE_STAT)};
#undef EMBER_WIRE_TABLE_STAT
constexpr Field<ServerStats, schema::ServerStats, uint64_t> kServerCounters[] = {
    EMBER_WIRE_FIELD(ServerStats, pull_requests, PullRequests),
    EMBER_WIRE_FIELD(ServerStats, push_requests, PushRequests),
    EMBER_WIRE_FIELD(ServerStats, keys_pulled, KeysPulled),
    EMBER_WIRE_FIELD(ServerStats, keys_pushed, KeysPushed),
    EMBER_WIRE_FIELD(ServerStats, errors, Errors)};

void WriteStats(schema::ServerStats::Builder out, const ServerStats& stats) {
  out.setServerId(stats.server_id);
  out.setPartitionsOwned(stats.partitions_owned);
  WriteFields(kServerCounters, stats, out);
  auto tables = out.initTables(static_cast<unsigned>(stats.tables.size()));
  for (size_t i = 0; i < stats.tables.size(); ++i) {
    tables[i].setName(stats.tables[i].name);
    WriteFields(kTableCounters, stats.tables[i], tables[i]);
  }
  WriteLimitHits(out.initLimitsHit(static_cast<unsigned>(stats.limits_hit.size())),
                 stats.limits_hit);
}

ServerStats ReadStats(schema::ServerStats::Reader in) {
  ServerStats stats;
  stats.server_id = in.getServerId();
  stats.partitions_owned = in.getPartitionsOwned();
  ReadFields(kServerCounters, in, stats);
  for (auto table : in.getTables()) {
    stats.tables.push_back(TableStats{ToString(table.getName())});
    ReadFields(kTableCounters, table, stats.tables.back());
  }
  stats.limits_hit = ReadLimitHits(in.getLimitsHit());
  return stats;
}

// Bytes a table's stats take beyond the fixed fields: its struct (a word per figure, and the
// name's pointer) and name; and the limits hit.
size_t StatsBytes(const ServerStats& stats) {
  size_t bytes = LimitHitsBytes(stats.limits_hit);
  // Per table: its counters, the name's pointer and text (rounded up to a word).
  constexpr size_t kTableWords = std::size(kTableCounters) + 2;
  for (const auto& table : stats.tables) {
    bytes += kTableWords * sizeof(::capnp::word) + table.name.size();
  }
  return bytes;
}

}  // namespace

std::optional<Result<RequestBody>> ReadDataPlaneRequest(schema::Request::Reader request,
                                                        FrameStorage& storage) {
  switch (request.which()) {
    case schema::Request::PULL:
      return AsBody<RequestBody>(ReadPull(request.getPull()));
    case schema::Request::PUSH:
      return AsBody<RequestBody>(ReadPush(request.getPush(), storage));
    case schema::Request::LOOKUP:
      return AsBody<RequestBody>(ReadLookup(request.getLookup()));
    case schema::Request::HINT:
      return AsBody<RequestBody>(ReadHint(request.getHint()));
    case schema::Request::PING:
      return AsBody<RequestBody>(PingRequest{});
    case schema::Request::STATS:
      return AsBody<RequestBody>(StatsRequest{});
    default:
      return std::nullopt;
  }
}

std::optional<Result<ResponseBody>> ReadDataPlaneResponse(schema::Response::Reader response,
                                                          FrameStorage& storage) {
  switch (response.which()) {
    case schema::Response::PULL:
      return AsBody<ResponseBody>(
          RowsAs(response.getPull(), response.getRowFormat(), storage, "pulled rows"));
    case schema::Response::LOOKUP:
      return AsBody<ResponseBody>(
          ReadLookupReply(response.getLookup(), response.getRowFormat(), storage));
    case schema::Response::STATS:
      return AsBody<ResponseBody>(ReadStats(response.getStats()));
    default:
      return std::nullopt;
  }
}

Frame EncodePing(const RequestHeader& header) {
  return BuildMessage(header, 0, [](schema::Request::Builder request) { request.setPing(); });
}

Frame EncodeStatsRequest(const RequestHeader& header) {
  return BuildMessage(header, 0, [](schema::Request::Builder request) { request.setStats(); });
}

Frame EncodePullSubset(const RequestHeader& header, std::string_view table,
                       std::span<const uint64_t> keys, std::span<const uint32_t> positions,
                       RowFormat row_format) {
  const KeysToSend one{table, keys, positions};
  return EncodePullTables(header, {&one, 1}, row_format);
}

Frame EncodePullTables(const RequestHeader& header, std::span<const KeysToSend> tables,
                       RowFormat row_format) {
  EMBER_CHECK(!tables.empty() && tables.size() <= kMaxTablesPerPull, "a pull of", tables.size(),
              "tables");
  const auto count = [](const KeysToSend& t) {
    return t.positions.empty() ? t.keys.size() : t.positions.size();
  };
  size_t bulk_bytes = 0;
  size_t small_bytes = 0;
  for (const KeysToSend& t : tables) {
    bulk_bytes += (count(t) * sizeof(uint64_t) + 7) / 8 * 8;  // each blob padded to a word
    small_bytes += t.table.size() + 4 * sizeof(::capnp::word);  // its name, struct, padding
  }
  return BuildInPlace(
      header, bulk_bytes, small_bytes,
      [&](schema::Request::Builder request, FrameBuilder& builder) {
        auto pull = request.initPull();
        pull.setRowFormat(ToSchema<schema::RowFormat>(row_format));
        // Every small object (names, the list) before the first blob: see FrameBuilder.
        pull.setTable(TextOf(tables[0].table));
        auto more = pull.initMoreTables(static_cast<unsigned>(tables.size() - 1));
        for (unsigned i = 1; i < tables.size(); ++i) more[i - 1].setTable(TextOf(tables[i].table));
        for (unsigned i = 0; i < tables.size(); ++i) {
          const KeysToSend& t = tables[i];
          const size_t n = count(t);
          auto* dst = reinterpret_cast<uint64_t*>(builder.InitBulk(
              n * sizeof(uint64_t), [&](unsigned bytes) {
                return i == 0 ? pull.initKeys(bytes) : more[i - 1].initKeys(bytes);
              }));
          if (t.positions.empty()) {
            if (n > 0) std::memcpy(dst, t.keys.data(), n * sizeof(uint64_t));
          } else {
            for (size_t k = 0; k < n; ++k) dst[k] = t.keys[t.positions[k]];
          }
        }
      });
}

Frame EncodeLookupSubset(const RequestHeader& header, std::string_view table,
                         std::span<const uint64_t> keys, std::span<const uint32_t> positions,
                         RowFormat row_format, MissingRows missing) {
  return EncodeKeysRequest(
      header, table, keys, positions, row_format, [&](schema::Request::Builder request) {
        auto lookup = request.initLookup();
        lookup.setMissing(ToSchema<schema::LookupRequest::MissingRows>(missing));
        return lookup;
      });
}

Frame EncodeHintSubset(const RequestHeader& header, std::string_view table,
                       std::span<const uint64_t> keys, std::span<const uint32_t> positions,
                       const HintId& id, uint32_t ttl_ms) {
  return EncodeKeysRequest(header, table, keys, positions, RowFormat::kF32,
                           [&](schema::Request::Builder request) {
                             auto hint = request.initHint();
                             hint.setHint(id.hint);
                             hint.setSender(id.sender);
                             hint.setTtlMs(ttl_ms);
                             return hint;
                           });
}

Frame EncodePull(const RequestHeader& header, std::string_view table,
                 std::span<const uint64_t> keys) {
  return EncodePullSubset(header, table, keys, {}, RowFormat::kF32);
}

Frame EncodePushSubset(const RequestHeader& header, std::string_view table,
                       std::span<const uint64_t> keys, std::span<const float> gradients,
                       uint32_t dim, std::span<const uint32_t> positions, uint64_t clock,
                       RowFormat gradient_format, uint32_t trainer, bool deferred,
                       const PushSender& sender, uint64_t release_hint, float learning_rate) {
  const size_t n = positions.empty() ? keys.size() : positions.size();
  const size_t grad_values = positions.empty() ? gradients.size() : n * dim;
  const size_t value_bytes = BytesPerValue(gradient_format);
  // Two blobs, each padded to a word.
  const size_t bulk_bytes =
      n * sizeof(uint64_t) + grad_values * value_bytes + sizeof(::capnp::word);
  return BuildInPlace(
      header, bulk_bytes, table.size(),
      [&](schema::Request::Builder request, FrameBuilder& builder) {
        auto push = request.initPush();
        push.setTable(TextOf(table));
        push.setClock(clock);
        push.setTrainer(trainer);
        push.setDeferred(deferred);
        push.setSender(sender.id);
        push.setAckedBelow(sender.acked_below);
        push.setReleaseHint(release_hint);
        push.setLearningRate(learning_rate);
        push.setGradientFormat(ToSchema<schema::RowFormat>(gradient_format));
        auto* key_dst = reinterpret_cast<uint64_t*>(
            builder.InitBulk(n * sizeof(uint64_t), [&](unsigned b) { return push.initKeys(b); }));
        kj::byte* grad_out = builder.InitBulk(grad_values * value_bytes,
                                              [&](unsigned b) { return push.initGradients(b); });
        auto put_values = [&](const float* src, size_t count, size_t offset) {
          if (count == 0) return;
          if (gradient_format == RowFormat::kF16) {
            FloatsToHalves(src, count, reinterpret_cast<uint16_t*>(grad_out) + offset);
          } else {
            std::memcpy(reinterpret_cast<float*>(grad_out) + offset, src, count * sizeof(float));
          }
        };
        if (positions.empty()) {
          if (n > 0) std::memcpy(key_dst, keys.data(), n * sizeof(uint64_t));
          put_values(gradients.data(), grad_values, 0);
        } else {
          // Positions need not ascend (a push's are in partition order): the rows a few keys
          // ahead are fetched while this one is copied.
          constexpr size_t kAhead = 16;
          const size_t row_bytes = size_t{dim} * sizeof(float);
          for (size_t i = 0; i < n; ++i) {
            if (i + kAhead < n) {
              const char* ahead = reinterpret_cast<const char*>(
                  gradients.data() + size_t{positions[i + kAhead]} * dim);
              for (size_t line = 0; line < row_bytes; line += 64) __builtin_prefetch(ahead + line);
            }
            key_dst[i] = keys[positions[i]];
            put_values(gradients.data() + size_t{positions[i]} * dim, dim, i * dim);
          }
        }
      });
}

Frame EncodePush(const RequestHeader& header, std::string_view table,
                 std::span<const uint64_t> keys, std::span<const float> gradients, uint64_t clock) {
  return EncodePushSubset(header, table, keys, gradients, 0, {}, clock, RowFormat::kF32);
}

Status CheckPullReplySize(size_t num_floats, RowFormat row_format) {
  const size_t bytes = num_floats * BytesPerValue(row_format);
  if (bytes <= kMaxBulkBytes) return Status::Ok();
  return InvalidArgument("a reply of " + std::to_string(num_floats) + " values (" +
                         std::to_string(bytes) + " bytes) exceeds the " +
                         std::to_string(kMaxBulkBytes) + " bytes one message carries");
}

struct PullReply::Builder {
  Builder(size_t bytes) : message(bytes, 48) {}
  FrameBuilder message;
  kj::byte* bulk = nullptr;
  std::vector<float> scratch;  // fp16 replies: the rows as float32, narrowed by Finish
};

PullReply::PullReply(uint64_t request_id, uint64_t epoch, size_t num_floats, RowFormat row_format)
    : PullReply(request_id, epoch, num_floats, row_format, std::nullopt) {}

PullReply::PullReply(uint64_t request_id, uint64_t epoch, size_t num_floats, RowFormat row_format,
                     Lookup lookup)
    : PullReply(request_id, epoch, num_floats, row_format, std::optional<Lookup>(lookup)) {}

PullReply::PullReply(uint64_t request_id, uint64_t epoch, size_t num_floats, RowFormat row_format,
                     std::optional<Lookup> lookup)
    : request_id_(request_id),
      epoch_(epoch),
      row_format_(row_format),
      builder_(std::make_unique<Builder>(BulkBytes(num_floats, row_format, lookup))) {
  const size_t bytes = num_floats * BytesPerValue(row_format);
  auto response = InitEnvelope(builder_->message, ResponseHead{request_id, epoch});
  response.setRowFormat(ToSchema<schema::RowFormat>(row_format));
  if (lookup) {
    auto reply = response.initLookup();
    // Blobs after every small object: the found flags first, then the rows.
    found_ = std::span<uint8_t>(
        reinterpret_cast<uint8_t*>(builder_->message.InitBulk(
            lookup->found_flags, [&](unsigned b) { return reply.initFound(b); })),
        lookup->found_flags);
    builder_->bulk =
        builder_->message.InitBulk(bytes, [&](unsigned b) { return reply.initRows(b); });
  } else {
    builder_->bulk =
        builder_->message.InitBulk(bytes, [&](unsigned b) { return response.initPull(b); });
  }
  if (row_format == RowFormat::kF32) {
    rows_ = std::span<float>(reinterpret_cast<float*>(builder_->bulk), num_floats);
  } else {
    builder_->scratch.resize(num_floats);
    rows_ = builder_->scratch;
  }
}

size_t PullReply::BulkBytes(size_t num_floats, RowFormat row_format,
                            const std::optional<Lookup>& lookup) {
  const size_t rows = num_floats * BytesPerValue(row_format);
  if (!lookup) return rows;
  // Two blobs, each padded to a word.
  return rows + lookup->found_flags + 2 * sizeof(::capnp::word);
}

PullReply::~PullReply() = default;

std::span<float> PullReply::rows() { return rows_; }

Frame PullReply::Finish() {
  if (row_format_ == RowFormat::kF16) {
    FloatsToHalves(rows_.data(), rows_.size(), reinterpret_cast<uint16_t*>(builder_->bulk));
  }
  return builder_->message.Finish();
}

Frame PullReply::Fail(const Status& status) {
  return EncodeStatusResponse(request_id_, epoch_, status);
}

Frame EncodePullResponse(uint64_t request_id, uint64_t epoch, size_t num_floats,
                         const std::function<Status(std::span<float>)>& fill,
                         RowFormat row_format) {
  PullReply reply(request_id, epoch, num_floats, row_format);
  Status filled = fill(reply.rows());
  return filled.ok() ? reply.Finish() : reply.Fail(filled);
}

Frame EncodeLookupResponse(uint64_t request_id, uint64_t epoch, size_t num_floats,
                           size_t found_flags,
                           const std::function<Status(std::span<float>, std::span<uint8_t>)>& fill,
                           RowFormat row_format) {
  PullReply reply(request_id, epoch, num_floats, row_format, PullReply::Lookup{found_flags});
  Status filled = fill(reply.rows(), reply.found());
  return filled.ok() ? reply.Finish() : reply.Fail(filled);
}

Frame EncodeStatsResponse(uint64_t request_id, uint64_t epoch, const ServerStats& stats) {
  return BuildMessage(
      ResponseHead{request_id, epoch}, StatsBytes(stats),
      [&](schema::Response::Builder response) { WriteStats(response.initStats(), stats); });
}

}  // namespace ember::wire
