// ShardService implementation.
#include "ps/server/shard_service.h"

#include <spdlog/spdlog.h>

#include <variant>

#include "common/catch_exceptions.h"
#include "common/overloaded.h"
#include "common/quote_for_error.h"
#include "embedding/table_config.h"
#include "ps/server/push_gate.h"

namespace ember::ps {

Result<std::unique_ptr<ShardService>> ShardService::Create(uint32_t server_id,
                                                           const std::vector<TableSpec>& tables,
                                                           const RoutingTable& routing,
                                                           const ShardStorage& storage,
                                                           const ShardPolicy& policy) {
  if (!routing.ready()) return FailedPrecondition("routing table is not ready");
  if (server_id >= routing.servers.size()) {
    return InvalidArgument("server id " + std::to_string(server_id) + " is not in the routing table");
  }
  if (tables.size() > policy.limits.tables_per_server) {
    return LimitExceeded(Limit::kTablesPerServer, policy.limits.tables_per_server,
                         "a registration with " + std::to_string(tables.size()) + " tables");
  }
  std::unique_ptr<ShardService> service(new ShardService(server_id, routing, policy));
  for (const TableSpec& spec : tables) {
    RETURN_IF_ERROR(embedding::ValidateTableSpec(spec));
    if (service->tables_.count(spec.name)) {
      return InvalidArgument("table '" + spec.name + "' is declared twice");
    }
    embedding::TierOptions tier;
    tier.pin_budget_bytes = tables.empty() ? 0 : storage.pin_budget_bytes / tables.size();
    if (storage.store != nullptr) {
      tier.disk = storage.store->Table(spec.name);
      if (tier.disk == nullptr) {
        return FailedPrecondition("table '" + spec.name + "' has no column family in '" +
                                  storage.store->path() + "'");
      }
      tier.budget = storage.budget;
      tier.cold_file_dir = storage.cold_file_dir;
      tier.cold_file_bytes = storage.cold_file_bytes / tables.size();
    }
    ASSIGN_OR_RETURN(auto table,
                     embedding::EmbeddingTable::Create(spec, routing.num_partitions, tier));
    service->tables_.emplace(spec.name, std::move(table));
    service->counters_.AddTable(spec.name);
  }
  // With durability flush the rows of a push are not written with it, so neither are its records.
  PushLedgerOptions ledger;
  ledger.max_senders = policy.limits.push_ledger_senders;
  ledger.prune_idle_sender = std::chrono::seconds(policy.limits.push_ledger_idle_seconds);
  ASSIGN_OR_RETURN(service->ledger_,
                   PushLedger::Open(
                       storage.store != nullptr && storage.store->push_log() != nullptr
                           ? storage.store
                           : nullptr,
                       ledger));
  if (storage.store != nullptr) {
    ShardService& self = *service;
    service->hints_ = std::make_unique<LookaheadHints>(
        server_id, policy.limits.queued_hints, self.transfer_mutex_, self.ownership_,
        [&self](std::chrono::steady_clock::time_point now) {
          for (const auto& [name, table] : self.tables_) table->ReleaseExpiredHints(now);
        });
  }
  return service;
}

ShardService::ShardService(uint32_t server_id, const RoutingTable& routing,
                           const ShardPolicy& policy)
    : server_id_(server_id),
      policy_(policy),
      ownership_(routing, server_id),
      checkpoints_(server_id, tables_, ownership_),
      outgoing_moves_(ownership_),
      plan_(server_id),
      deferred_(policy.limits.deferred_pushes_per_clock),
      followers_(policy.limits.followers, kFollowerIdleTimeout),
      transfer_source_({.id = server_id,
                        .chunk_bytes = policy.transfer_chunk_bytes,
                        .tables = &tables_,
                        .ownership = &ownership_,
                        .moves = &outgoing_moves_,
                        .plan = &plan_,
                        .deferred = &deferred_,
                        .transfer_mutex = &transfer_mutex_,
                        .counters = &counters_}) {
  plan_.Update(routing, {}, {});
}

Frame ShardService::Handle(Frame request, const Peer& peer) {
  // Known once decoded, for the error an exception escaping the handler becomes.
  std::string_view kind = "undecoded";
  uint64_t request_id = 0;
  RequestTimer timer(counters_.requests(), kind, ShardCounters::ErrorsOnThisThread());
  auto handled = CatchExceptions([&]() -> Frame {
    auto decoded = wire::DecodeRequest(std::move(request), &request_id);
    if (!decoded.ok()) {
      spdlog::warn("server {}: refusing undecodable request {}: {}", server_id_, request_id,
                   decoded.status().ToString());
      return Error(request_id, decoded.status());
    }
    kind = wire::RequestKindName(decoded->body);
    request_id = decoded->header.request_id;
    return HandleDecoded(*decoded, peer);
  });
  if (handled.ok()) return std::move(handled).value();
  const Status failed =
      handled.status().WithContext("server: handling a '" + std::string(kind) + "' request");
  spdlog::error("server {}: request {}: {}", server_id_, request_id, failed.ToString());
  return Error(request_id, failed);
}

Frame ShardService::Error(uint64_t request_id, const Status& status) {
  counters_.CountError();
  return wire::EncodeStatusResponse(request_id, ownership_.epoch(), status);
}

Frame ShardService::Reply(uint64_t request_id, const Status& status) {
  if (!status.ok()) return Error(request_id, status);
  return wire::EncodeStatusResponse(request_id, ownership_.epoch(), status);
}

Frame ShardService::HandleDecoded(const wire::DecodedRequest& request, const Peer& peer) {
  const wire::RequestHeader& header = request.header;
  // Before any handler: who may send each kind is declared once, in wire::SendersOf.
  if (Status allowed = wire::CheckSender(peer, request.body); !allowed.ok()) {
    spdlog::debug("server {}: {}", server_id_, allowed.message());  // counted as an error
    return Error(header.request_id, allowed);
  }
  // Each request kind a parameter server handles, with its handler; any other kind is refused.
  return std::visit(
      Overloaded{
          [&](const wire::PullRequest& pull) { return HandlePull(header, pull); },
          [&](const wire::LookupRequest& lookup) { return HandleLookup(header, lookup); },
          [&](const wire::FollowRequest& follow) { return HandleFollow(header, follow); },
          [&](const wire::PushRequest& push) { return HandlePush(header, push, peer); },
          [&](const wire::HintRequest& hint) { return HandleHint(header, hint, peer); },
          [&](const wire::ApplyClockRequest& apply) {
            return HandleApplyClock(header, apply, peer);
          },
          [&](const wire::CheckpointRequest& checkpoint) {
            return Reply(header.request_id, checkpoints_.Run(checkpoint));
          },
          [&](const wire::PartitionTransferRequest& transfer) {
            Result<Frame> answer = transfer_source_.Answer(header.request_id, transfer, peer);
            return answer.ok() ? std::move(answer).value()
                               : Error(header.request_id, answer.status());
          },
          [&](const wire::PingRequest&) { return Reply(header.request_id, Status::Ok()); },
          [&](const wire::StatsRequest&) {
            return wire::EncodeStatsResponse(header.request_id, ownership_.epoch(), Stats());
          },
          [&](const auto& other) {
            return Error(header.request_id,
                         InvalidArgument("a parameter server does not handle '" +
                                         std::string(other.kName) + "' requests"));
          },
      },
      request.body);
}

Result<embedding::EmbeddingTable*> ShardService::FindTable(const std::string& name) {
  auto it = tables_.find(name);
  if (it == tables_.end()) return NotFound("unknown table " + QuoteForError(name));
  return it->second.get();
}

Frame ShardService::HandlePull(const wire::RequestHeader& header,
                               const wire::PullRequest& pull) {
  counters_.Add(ShardCount::kPullRequests);
  size_t num_keys = 0;
  size_t num_floats = 0;
  std::vector<embedding::EmbeddingTable*> tables;
  tables.reserve(pull.tables.size());
  for (const wire::TableKeys& slice : pull.tables) {
    auto table = FindTable(slice.table);
    if (!table.ok()) return Error(header.request_id, table.status().WithContext("pull"));
    tables.push_back(*table);
    num_keys += slice.keys.size();
    num_floats += slice.keys.size() * (*table)->spec().dim;
  }
  const std::string& first_table = pull.tables.front().table;
  if (Status fits = CheckKeyCount("pull", first_table, num_keys); !fits.ok()) {
    return Error(header.request_id, fits);
  }
  if (Status fits = wire::CheckPullReplySize(num_floats, pull.row_format); !fits.ok()) {
    return Error(header.request_id,
                 fits.WithContext("pull of " + std::to_string(num_keys) + " keys of table '" +
                                  first_table + "'" +
                                  (tables.size() > 1 ? " and others" : "") + " (dim " +
                                  std::to_string(tables.front()->spec().dim) + ")"));
  }
  std::shared_lock moves(transfer_mutex_);
  // Each table hashes its keys to their partitions once, for the lookups and for the ownership
  // check, and copies the rows straight into the reply frame, one table after the other.
  wire::PullReply reply(header.request_id, ownership_.epoch(), num_floats, pull.row_format);
  Status status = Status::Ok();
  size_t offset = 0;
  for (size_t t = 0; t < tables.size() && status.ok(); ++t) {
    const wire::TableKeys& slice = pull.tables[t];
    const size_t floats = slice.keys.size() * tables[t]->spec().dim;
    status = tables[t]->Pull(slice.keys, reply.rows().subspan(offset, floats),
                             ownership_.ServedCheck(slice.table));
    offset += floats;
  }
  if (!status.ok()) {
    counters_.CountError();
    return reply.Fail(status);
  }
  counters_.Add(ShardCount::kKeysPulled, num_keys);
  return reply.Finish();
}

Status ShardService::CheckKeyCount(std::string_view kind, const std::string& table, size_t keys) {
  if (keys <= policy_.limits.keys_per_message) return Status::Ok();
  counters_.limits_hit().Count(Limit::kKeysPerMessage);
  return LimitExceeded(Limit::kKeysPerMessage, policy_.limits.keys_per_message,
                       std::string(kind) + " of " + std::to_string(keys) + " keys of table " +
                           QuoteForError(table));
}

Frame ShardService::HandlePush(const wire::RequestHeader& header, const wire::PushRequest& push,
                               const Peer& peer) {
  counters_.Add(ShardCount::kPushRequests);
  if (Status fits = CheckKeyCount("push", push.table, push.keys.size()); !fits.ok()) {
    return Error(header.request_id, fits);
  }
  auto table = FindTable(push.table);
  if (!table.ok()) return Error(header.request_id, table.status().WithContext("push"));
  const uint32_t dim = (*table)->spec().dim;
  // A push of the wrong size is the table's to refuse.
  const int64_t bad_row = push.gradients.size() == push.keys.size() * dim
                              ? FirstNonFiniteRow(push.gradients, dim)
                              : -1;
  if (bad_row < 0) return ApplyPush(header, push, **table, peer);
  // Before the gate claims the push: a refused push changes no row and no optimizer state.
  TableStatCounters& counts = counters_.table(push.table);
  if (policy_.non_finite == NonFinitePolicy::kRefuse) {
    counts.Add(TableStat::kNonFiniteRefused);
    return Error(header.request_id, NonFiniteRefusal(push, dim, bad_row));
  }
  const FiniteRows kept = KeepFiniteRows(push, dim);
  counts.Add(TableStat::kNonFiniteSkipped, kept.skipped);
  spdlog::debug("server {}: push {} to table {}: {} rows with non-finite gradients skipped",
                server_id_, header.request_id, push.table, kept.skipped);
  wire::PushRequest finite = push;
  finite.keys = kept.keys;
  finite.gradients = kept.gradients;
  return ApplyPush(header, finite, **table, peer);
}

Frame ShardService::ApplyPush(const wire::RequestHeader& header, const wire::PushRequest& push,
                              embedding::EmbeddingTable& table, const Peer& peer) {
  std::shared_lock moves(transfer_mutex_);
  // The table hashes the keys to their partitions once, for the rows and for the gate (the
  // ownership check, then the ledger's claim; it holds a deferred push). Copying a partition
  // takes transfer_mutex_ exclusively: a push is wholly before a copy begins (its rows in the
  // copy) or after (its keys noted by the tables for the hand-over).
  PushGate gate(ownership_, *ledger_, deferred_, header.request_id, push, peer.public_key);
  Status applied = table.Push(push.keys, push.gradients, gate, push.learning_rate);
  if (push.release_hint != 0 && hints_ != nullptr && table.tiered()) {
    hints_->Release(table, peer, push.sender.id, push.release_hint);
  }
  if (gate.refused_by()) counters_.limits_hit().Count(*gate.refused_by());
  switch (gate.outcome()) {
    case PushGate::Outcome::kStopped:
      return Error(header.request_id, applied);
    case PushGate::Outcome::kDuplicate:
      counters_.Add(ShardCount::kDuplicatePushes);
      spdlog::debug("server {}: push {} of sender {:x} was applied before; not applied again",
                    server_id_, header.request_id, push.sender.id);
      return wire::EncodeStatusResponse(header.request_id, ownership_.epoch(), Status::Ok());
    case PushGate::Outcome::kPassed:
      break;
  }
  gate.Finish(applied);
  if (!applied.ok()) return Error(header.request_id, applied.WithContext("push"));
  counters_.Add(ShardCount::kKeysPushed, push.keys.size());
  return wire::EncodeStatusResponse(header.request_id, ownership_.epoch(), Status::Ok());
}

wire::ServerStats ShardService::Stats() const {
  return counters_.Stats(server_id_, tables_, ownership_.served_count());
}

Result<uint64_t> ShardService::ExpireRows() {
  uint64_t expired = 0;
  for (const auto& [name, table] : tables_) {
    ASSIGN_OR_RETURN(uint64_t count, table->ExpireRows());
    expired += count;
  }
  return expired;
}

bool ShardService::has_expiry() const {
  for (const auto& [name, table] : tables_) {
    if (table->spec().ttl_seconds > 0) return true;
  }
  return false;
}

Status ShardService::Flush() {
  for (const auto& [name, table] : tables_) RETURN_IF_ERROR(table->FlushDirtyRows());
  return Status::Ok();
}

}  // namespace ember::ps
