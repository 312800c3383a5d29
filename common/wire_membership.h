// Membership and clocks on the wire: servers and trainers registering with the scheduler, the
// routing table, barriers, trainers' heartbeats and step clocks, the bsp apply-clock order to
// servers, draining a server and the cluster status, with their replies.
//
// Part of common/wire.h, which includes this header and decodes these messages.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock_grant.h"
#include "common/cluster_status.h"
#include "common/frame.h"
#include "common/routing_table.h"
#include "common/sync_options.h"
#include "common/table_spec.h"
#include "common/wire_header.h"

namespace ember::wire {

using ember::ClockGrant;
using ember::ClusterStatus;
using ember::ServerStatus;

// ---- Requests ----

struct RegisterServerRequest {
  static constexpr std::string_view kName = "register-server";
  static constexpr PeerRoles kSenders = kServers;
  std::string endpoint;
  bool join = false;  // join a formed cluster
};
struct RegisterTrainerRequest {
  static constexpr std::string_view kName = "register-trainer";
  static constexpr PeerRoles kSenders = kTrainers;
  std::string name;
};
// A read-only client (serving, `ember lookup`): answered with the tables and routing table like a
// trainer's registration, but it takes no trainer slot, reports no clock and is not waited for.
struct RegisterReaderRequest {
  static constexpr std::string_view kName = "register-reader";
  static constexpr PeerRoles kSenders = kTrainers | kReaders;
  std::string name;
};
struct GetRoutingRequest {
  static constexpr std::string_view kName = "get-routing";
  static constexpr PeerRoles kSenders = kAnyRole;
};
struct BarrierRequest {
  static constexpr std::string_view kName = "barrier";
  static constexpr PeerRoles kSenders = kTrainers;
  std::string name;
  uint32_t count = 0;
};
struct ApplyClockRequest {
  static constexpr std::string_view kName = "apply-clock";
  static constexpr PeerRoles kSenders = kTrainers;
  uint64_t clock = 0;
  std::vector<uint32_t> trainers;  // whose deferred pushes of `clock` count
  Combine combine = Combine::kMean;
  std::string signature;  // the grant's, from the scheduler (empty without authentication)
};
struct TrainerClockRequest {
  static constexpr std::string_view kName = "trainer-clock";
  static constexpr PeerRoles kSenders = kTrainers;
  uint32_t trainer = 0;
  uint64_t clock = 0;  // steps completed
  bool leave = false;
};
struct HeartbeatRequest {
  static constexpr std::string_view kName = "heartbeat";
  static constexpr PeerRoles kSenders = kTrainers;
  uint32_t trainer = 0;
};
struct DrainRequest {
  static constexpr std::string_view kName = "drain";
  static constexpr PeerRoles kSenders = kAdmins;
  uint32_t server = 0;
};
struct ClusterStatusRequest {
  static constexpr std::string_view kName = "cluster-status";
  static constexpr PeerRoles kSenders = kAnyRole;
};

Frame EncodeRegisterServer(const RequestHeader& header, std::string_view endpoint,
                           bool join = false);
Frame EncodeRegisterTrainer(const RequestHeader& header, std::string_view name);
Frame EncodeRegisterReader(const RequestHeader& header, std::string_view name);
Frame EncodeGetRouting(const RequestHeader& header);
Frame EncodeBarrier(const RequestHeader& header, std::string_view name, uint32_t count);
Frame EncodeApplyClock(const RequestHeader& header, const ApplyClockRequest& apply);
Frame EncodeTrainerClock(const RequestHeader& header, const TrainerClockRequest& clock);
Frame EncodeHeartbeat(const RequestHeader& header, uint32_t trainer);
Frame EncodeDrain(const RequestHeader& header, uint32_t server);
Frame EncodeClusterStatusRequest(const RequestHeader& header);

// ---- Responses (decoded as these structs, RoutingTable and ClockGrant) ----

// The id in a reader's registration: readers are not members and have none of their own.
constexpr uint32_t kReaderId = ~uint32_t{0};

struct Registration {
  uint32_t id = 0;  // a server's or trainer's id; kReaderId for a reader
  std::vector<TableSpec> tables;
  RoutingTable routing;
  uint64_t clock = 0;  // trainers: the clock to start from
  std::string grant_key;  // servers: the key clock grants are signed with (empty: unsigned)
  // Trainers: how the run synchronises (mode, staleness, combine, trainers, clock_timeout; the
  // other fields are the scheduler's own and keep their defaults here).
  SyncOptions sync;
};

// The responses that carry a routing table carry its epoch as theirs.
Frame EncodeRegistrationResponse(uint64_t request_id, const Registration& registration);
Frame EncodeRoutingResponse(uint64_t request_id, const RoutingTable& routing);
Frame EncodeClockGrantResponse(uint64_t request_id, uint64_t epoch, const ClockGrant& grant);
Frame EncodeClusterStatusResponse(uint64_t request_id, const ClusterStatus& status);

}  // namespace ember::wire
