// Membership and clocks on the wire: registration (with table specs), routing, barriers,
// heartbeats, trainer and apply clocks, drain and cluster status, encoded and read; and the
// routing-table codec the moves topic shares.
#include "common/wire_membership.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "common/wire_internal.h"

namespace ember::wire {
namespace {

// The numbers of a table spec's optimizer and initializer, each once for both directions; the
// kinds are checked on the way in.
constexpr Field<OptimizerSpec, schema::OptimizerSpec, float> kOptimizerFields[] = {
    EMBER_WIRE_FIELD(OptimizerSpec, learning_rate, LearningRate),
    EMBER_WIRE_FIELD(OptimizerSpec, initial_accumulator, InitialAccumulator),
    EMBER_WIRE_FIELD(OptimizerSpec, epsilon, Epsilon),
    EMBER_WIRE_FIELD(OptimizerSpec, beta1, Beta1),
    EMBER_WIRE_FIELD(OptimizerSpec, beta2, Beta2),
    EMBER_WIRE_FIELD(OptimizerSpec, l1, L1),
    EMBER_WIRE_FIELD(OptimizerSpec, l2, L2),
    EMBER_WIRE_FIELD(OptimizerSpec, ftrl_beta, FtrlBeta),
    EMBER_WIRE_FIELD(OptimizerSpec, weight_decay, WeightDecay)};
constexpr Field<InitializerSpec, schema::InitializerSpec, float> kInitializerFields[] = {
    EMBER_WIRE_FIELD(InitializerSpec, mean, Mean),
    EMBER_WIRE_FIELD(InitializerSpec, stddev, Stddev), EMBER_WIRE_FIELD(InitializerSpec, low, Low),
    EMBER_WIRE_FIELD(InitializerSpec, high, High)};

// An optimizer or initializer: its kind and its numbers.
template <typename Plain, typename Schema, size_t N>
void WritePart(typename Schema::Builder out, const Plain& part,
               const Field<Plain, Schema, float> (&fields)[N]) {
  out.setKind(ToSchema<decltype(out.getKind())>(part.kind));
  WriteFields(fields, part, out);
}

// The same read back; InvalidArgument naming the table and `what` for a kind past `last`.
template <typename Plain, typename Schema, size_t N>
Result<Plain> ReadPart(typename Schema::Reader in, const Field<Plain, Schema, float> (&fields)[N],
                       decltype(Plain::kind) last, const std::string& table,
                       std::string_view what) {
  Plain part;
  const auto kind = FromSchema(in.getKind(), last);
  if (!kind) {
    return InvalidArgument("table '" + table + "': unknown " + std::string(what) + " kind " +
                           std::to_string(static_cast<uint16_t>(in.getKind())));
  }
  part.kind = *kind;
  ReadFields(fields, in, part);
  return part;
}

void WriteTableSpec(schema::TableSpec::Builder out, const TableSpec& spec) {
  out.setName(spec.name);
  out.setDim(spec.dim);
  out.setSeed(spec.seed);
  out.setAdmitAfter(spec.admit_after);
  out.setTtlSeconds(spec.ttl_seconds);
  WritePart(out.initOptimizer(), spec.optimizer, kOptimizerFields);
  WritePart(out.initInitializer(), spec.initializer, kInitializerFields);
}

Result<TableSpec> ReadTableSpec(schema::TableSpec::Reader in) {
  TableSpec spec;
  spec.name = ToString(in.getName());
  spec.dim = in.getDim();
  spec.seed = in.getSeed();
  spec.admit_after = in.getAdmitAfter();
  spec.ttl_seconds = in.getTtlSeconds();
  ASSIGN_OR_RETURN(spec.optimizer, ReadPart(in.getOptimizer(), kOptimizerFields,
                                            OptimizerKind::kFtrl, spec.name, "optimizer"));
  ASSIGN_OR_RETURN(spec.initializer, ReadPart(in.getInitializer(), kInitializerFields,
                                              InitializerKind::kUniform, spec.name, "initializer"));
  return spec;
}

void WriteRegistration(schema::Registration::Builder out, const Registration& registration) {
  out.setId(registration.id);
  auto tables = out.initTables(static_cast<unsigned>(registration.tables.size()));
  for (size_t i = 0; i < registration.tables.size(); ++i) {
    WriteTableSpec(tables[i], registration.tables[i]);
  }
  WriteRouting(out.initRouting(), registration.routing);
  out.setClock(registration.clock);
  out.setGrantKey(DataOf(std::string_view(registration.grant_key)));
  auto sync = out.initSync();
  sync.setMode(ToSchema<schema::SyncSettings::Mode>(registration.sync.mode));
  sync.setStaleness(registration.sync.staleness);
  sync.setCombine(ToSchema<schema::ApplyClock::Combine>(registration.sync.combine));
  sync.setTrainers(registration.sync.trainers);
  sync.setClockTimeoutMs(static_cast<uint32_t>(std::clamp<int64_t>(
      registration.sync.clock_timeout.count(), 0, std::numeric_limits<uint32_t>::max())));
}

Result<Registration> ReadRegistration(schema::Registration::Reader in) {
  Registration registration;
  registration.id = in.getId();
  for (auto table : in.getTables()) {
    ASSIGN_OR_RETURN(auto spec, ReadTableSpec(table));
    registration.tables.push_back(std::move(spec));
  }
  ASSIGN_OR_RETURN(registration.routing, ReadRouting(in.getRouting()));
  registration.clock = in.getClock();
  registration.grant_key = BytesOf(in.getGrantKey());
  const auto sync = in.getSync();
  const auto mode = FromSchema(sync.getMode(), SyncMode::kSsp);
  const auto combine = FromSchema(sync.getCombine(), Combine::kSum);
  if (!mode || !combine) return InvalidArgument("a registration names an unknown sync mode");
  registration.sync.mode = *mode;
  registration.sync.staleness = sync.getStaleness();
  registration.sync.combine = *combine;
  registration.sync.trainers = sync.getTrainers();
  registration.sync.clock_timeout = std::chrono::milliseconds(sync.getClockTimeoutMs());
  return registration;
}

Result<ApplyClockRequest> ReadApplyClock(schema::ApplyClock::Reader in) {
  ApplyClockRequest apply;
  apply.clock = in.getClock();
  ASSIGN_OR_RETURN(auto trainers, DataAs<uint32_t>(in.getTrainers(), "apply trainers"));
  apply.trainers.assign(trainers.begin(), trainers.end());
  const auto combine = FromSchema(in.getCombine(), Combine::kSum);
  if (!combine) return InvalidArgument("apply-clock names an unknown combine rule");
  apply.combine = *combine;
  apply.signature = BytesOf(in.getSignature());
  return apply;
}

void WriteClockGrant(schema::ClockGrant::Builder out, const ClockGrant& grant) {
  out.setClock(grant.clock);
  out.setMinClock(grant.min_clock);
  out.setTrainers(DataOf(grant.trainers));
  out.setCutClock(grant.cut.clock);
  out.setCutDir(grant.cut.dir);
  out.setCutKeep(grant.cut.keep);
  out.setCutChain(grant.cut.chain);
  out.setCutAfter(grant.cut.after);
  out.setSignature(DataOf(std::string_view(grant.signature)));
}

Result<ClockGrant> ReadClockGrant(schema::ClockGrant::Reader in) {
  ClockGrant grant;
  grant.clock = in.getClock();
  grant.min_clock = in.getMinClock();
  ASSIGN_OR_RETURN(auto trainers, DataAs<uint32_t>(in.getTrainers(), "granted trainers"));
  grant.trainers.assign(trainers.begin(), trainers.end());
  grant.cut = CutInfo{in.getCutClock(),   ToString(in.getCutDir()), in.getCutKeep(), false,
                      in.getCutChain(), ToString(in.getCutAfter())};
  grant.signature = BytesOf(in.getSignature());
  return grant;
}

void WriteClusterStatus(schema::ClusterStatus::Builder out, const ClusterStatus& status) {
  WriteRouting(out.initRouting(), status.routing);
  auto servers = out.initServers(static_cast<unsigned>(status.servers.size()));
  for (size_t i = 0; i < status.servers.size(); ++i) {
    servers[i].setId(status.servers[i].id);
    servers[i].setEndpoint(status.servers[i].endpoint);
    servers[i].setState(status.servers[i].state);
    servers[i].setPartitions(status.servers[i].partitions);
  }
  out.setMovesInFlight(status.moves_in_flight);
  out.setMovesPlanned(status.moves_planned);
  out.setMovesDone(status.moves_done);
  WriteLimitHits(out.initLimitsHit(static_cast<unsigned>(status.limits_hit.size())),
                 status.limits_hit);
}

Result<ClusterStatus> ReadClusterStatus(schema::ClusterStatus::Reader in) {
  ClusterStatus status;
  ASSIGN_OR_RETURN(status.routing, ReadRouting(in.getRouting()));
  for (auto s : in.getServers()) {
    status.servers.push_back(ServerStatus{s.getId(), ToString(s.getEndpoint()),
                                          ToString(s.getState()), s.getPartitions()});
  }
  status.moves_in_flight = in.getMovesInFlight();
  status.moves_planned = in.getMovesPlanned();
  status.moves_done = in.getMovesDone();
  status.limits_hit = ReadLimitHits(in.getLimitsHit());
  return status;
}

}  // namespace

void WriteRouting(schema::RoutingTable::Builder out, const RoutingTable& routing) {
  out.setEpoch(routing.epoch);
  out.setNumPartitions(routing.num_partitions);
  auto servers = out.initServers(static_cast<unsigned>(routing.servers.size()));
  for (size_t i = 0; i < routing.servers.size(); ++i) {
    servers[i].setId(routing.servers[i].id);
    servers[i].setEndpoint(routing.servers[i].endpoint);
    servers[i].setPublicKey(routing.servers[i].public_key);
  }
  out.setOwners(DataOf(routing.owners));
}

Result<RoutingTable> ReadRouting(schema::RoutingTable::Reader in) {
  RoutingTable routing;
  routing.epoch = in.getEpoch();
  routing.num_partitions = in.getNumPartitions();
  for (auto server : in.getServers()) {
    routing.servers.push_back(ServerInfo{server.getId(), ToString(server.getEndpoint()),
                                         ToString(server.getPublicKey())});
    if (routing.servers.back().id != routing.servers.size() - 1) {
      return InvalidArgument("routing table: server ids are not 0..n-1 in order");
    }
  }
  ASSIGN_OR_RETURN(auto owners, DataAs<uint32_t>(in.getOwners(), "routing table owners"));
  if (routing.epoch > 0 && owners.size() != routing.num_partitions) {
    return InvalidArgument("routing table: " + std::to_string(owners.size()) + " owners for " +
                           std::to_string(routing.num_partitions) + " partitions");
  }
  for (uint32_t owner : owners) {
    if (owner >= routing.servers.size()) {
      return InvalidArgument("routing table: owner " + std::to_string(owner) +
                             " is not a known server");
    }
  }
  routing.owners.assign(owners.begin(), owners.end());
  return routing;
}

size_t RoutingBytes(const RoutingTable& routing) {
  size_t bytes = routing.owners.size() * sizeof(uint32_t);
  for (const auto& server : routing.servers)
    bytes += 4 * sizeof(::capnp::word) + server.endpoint.size() + server.public_key.size();
  return bytes;
}

void WriteLimitHits(::capnp::List<schema::LimitHit>::Builder out,
                    const std::vector<LimitHit>& hits) {
  for (size_t i = 0; i < hits.size(); ++i) {
    out[i].setLimit(hits[i].limit);
    out[i].setCount(hits[i].count);
  }
}

std::vector<LimitHit> ReadLimitHits(::capnp::List<schema::LimitHit>::Reader in) {
  std::vector<LimitHit> hits;
  for (auto hit : in) hits.push_back(LimitHit{ToString(hit.getLimit()), hit.getCount()});
  return hits;
}

size_t LimitHitsBytes(const std::vector<LimitHit>& hits) {
  size_t bytes = 0;
  for (const auto& hit : hits) bytes += 4 * sizeof(::capnp::word) + hit.limit.size();
  return bytes;
}

std::optional<Result<RequestBody>> ReadMembershipRequest(schema::Request::Reader request,
                                                         FrameStorage&) {
  switch (request.which()) {
    case schema::Request::REGISTER_SERVER: {
      auto in = request.getRegisterServer();
      return AsBody<RequestBody>(RegisterServerRequest{ToString(in.getEndpoint()), in.getJoin()});
    }
    case schema::Request::REGISTER_TRAINER:
      return AsBody<RequestBody>(
          RegisterTrainerRequest{ToString(request.getRegisterTrainer().getName())});
    case schema::Request::REGISTER_READER:
      return AsBody<RequestBody>(
          RegisterReaderRequest{ToString(request.getRegisterReader().getName())});
    case schema::Request::GET_ROUTING:
      return AsBody<RequestBody>(GetRoutingRequest{});
    case schema::Request::BARRIER: {
      auto in = request.getBarrier();
      return AsBody<RequestBody>(BarrierRequest{ToString(in.getName()), in.getCount()});
    }
    case schema::Request::APPLY_CLOCK:
      return AsBody<RequestBody>(ReadApplyClock(request.getApplyClock()));
    case schema::Request::TRAINER_CLOCK: {
      auto in = request.getTrainerClock();
      return AsBody<RequestBody>(
          TrainerClockRequest{in.getTrainer(), in.getClock(), in.getLeave()});
    }
    case schema::Request::HEARTBEAT:
      return AsBody<RequestBody>(HeartbeatRequest{request.getHeartbeat()});
    case schema::Request::DRAIN:
      return AsBody<RequestBody>(DrainRequest{request.getDrain()});
    case schema::Request::CLUSTER_STATUS:
      return AsBody<RequestBody>(ClusterStatusRequest{});
    default:
      return std::nullopt;
  }
}

std::optional<Result<ResponseBody>> ReadMembershipResponse(schema::Response::Reader response,
                                                           FrameStorage&) {
  switch (response.which()) {
    case schema::Response::REGISTRATION:
      return AsBody<ResponseBody>(ReadRegistration(response.getRegistration()));
    case schema::Response::ROUTING:
      return AsBody<ResponseBody>(ReadRouting(response.getRouting()));
    case schema::Response::CLOCK_GRANT:
      return AsBody<ResponseBody>(ReadClockGrant(response.getClockGrant()));
    case schema::Response::CLUSTER_STATUS:
      return AsBody<ResponseBody>(ReadClusterStatus(response.getClusterStatus()));
    default:
      return std::nullopt;
  }
}

// ---- Encoders ----

Frame EncodeRegisterServer(const RequestHeader& header, std::string_view endpoint, bool join) {
  return BuildMessage(header, endpoint.size(), [&](schema::Request::Builder request) {
    auto out = request.initRegisterServer();
    out.setEndpoint(TextOf(endpoint));
    out.setJoin(join);
  });
}

Frame EncodeRegisterTrainer(const RequestHeader& header, std::string_view name) {
  return BuildMessage(header, name.size(), [&](schema::Request::Builder request) {
    request.initRegisterTrainer().setName(TextOf(name));
  });
}

Frame EncodeRegisterReader(const RequestHeader& header, std::string_view name) {
  return BuildMessage(header, name.size(), [&](schema::Request::Builder request) {
    request.initRegisterReader().setName(TextOf(name));
  });
}

Frame EncodeGetRouting(const RequestHeader& header) {
  return BuildMessage(header, 0, [](schema::Request::Builder request) { request.setGetRouting(); });
}

Frame EncodeBarrier(const RequestHeader& header, std::string_view name, uint32_t count) {
  return BuildMessage(header, name.size(), [&](schema::Request::Builder request) {
    auto out = request.initBarrier();
    out.setName(TextOf(name));
    out.setCount(count);
  });
}

Frame EncodeApplyClock(const RequestHeader& header, const ApplyClockRequest& apply) {
  return BuildMessage(header, apply.trainers.size() * sizeof(uint32_t) + apply.signature.size(),
                      [&](schema::Request::Builder request) {
                        auto out = request.initApplyClock();
                        out.setClock(apply.clock);
                        out.setCombine(ToSchema<schema::ApplyClock::Combine>(apply.combine));
                        out.setTrainers(DataOf(apply.trainers));
                        out.setSignature(DataOf(std::string_view(apply.signature)));
                      });
}

Frame EncodeTrainerClock(const RequestHeader& header, const TrainerClockRequest& clock) {
  return BuildMessage(header, 0, [&](schema::Request::Builder request) {
    auto out = request.initTrainerClock();
    out.setTrainer(clock.trainer);
    out.setClock(clock.clock);
    out.setLeave(clock.leave);
  });
}

Frame EncodeHeartbeat(const RequestHeader& header, uint32_t trainer) {
  return BuildMessage(header, 0,
                      [&](schema::Request::Builder request) { request.setHeartbeat(trainer); });
}

Frame EncodeDrain(const RequestHeader& header, uint32_t server) {
  return BuildMessage(header, 0,
                      [&](schema::Request::Builder request) { request.setDrain(server); });
}

Frame EncodeClusterStatusRequest(const RequestHeader& header) {
  return BuildMessage(header, 0,
                      [](schema::Request::Builder request) { request.setClusterStatus(); });
}

Frame EncodeRegistrationResponse(uint64_t request_id, const Registration& registration) {
  size_t bytes = RoutingBytes(registration.routing) + registration.grant_key.size();
  // A table spec takes 16 words and its name.
  for (const auto& spec : registration.tables)
    bytes += 16 * sizeof(::capnp::word) + spec.name.size();
  return BuildMessage(ResponseHead{request_id, registration.routing.epoch}, bytes,
                      [&](schema::Response::Builder response) {
                        WriteRegistration(response.initRegistration(), registration);
                      });
}

Frame EncodeRoutingResponse(uint64_t request_id, const RoutingTable& routing) {
  return BuildMessage(
      ResponseHead{request_id, routing.epoch}, RoutingBytes(routing),
      [&](schema::Response::Builder response) { WriteRouting(response.initRouting(), routing); });
}

Frame EncodeClockGrantResponse(uint64_t request_id, uint64_t epoch, const ClockGrant& grant) {
  return BuildMessage(ResponseHead{request_id, epoch},
                      grant.trainers.size() * sizeof(uint32_t) + grant.cut.dir.size() +
                          grant.cut.after.size() + grant.signature.size(),
                      [&](schema::Response::Builder response) {
                        WriteClockGrant(response.initClockGrant(), grant);
                      });
}

Frame EncodeClusterStatusResponse(uint64_t request_id, const ClusterStatus& status) {
  size_t bytes = RoutingBytes(status.routing) + LimitHitsBytes(status.limits_hit);
  for (const auto& server : status.servers) {
    bytes += 5 * sizeof(::capnp::word) + server.endpoint.size() + server.state.size();
  }
  return BuildMessage(ResponseHead{request_id, status.routing.epoch}, bytes,
                      [&](schema::Response::Builder response) {
                        WriteClusterStatus(response.initClusterStatus(), status);
                      });
}

}  // namespace ember::wire
