// Wire codec implementation: the Cap'n Proto adapter.
#include "common/wire.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>
#include <kj/io.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "common/check.h"
#include "common/ember.capnp.h"
#include "common/half.h"

namespace ember::wire {
namespace {

// Owns a received frame plus, when the frame was not word-aligned, an aligned copy of it.
struct FrameStorage {
  explicit FrameStorage(Frame f) : frame(std::move(f)) {}
  Frame frame;
  std::vector<::capnp::word> aligned;
  std::vector<float> widened;  // fp16 values of the frame converted to float32
};

::capnp::ReaderOptions DecodeOptions() {
  ::capnp::ReaderOptions options;
  options.traversalLimitInWords = kMaxFrameBytes / sizeof(::capnp::word);
  options.nestingLimit = 16;
  return options;
}

// Validates size/alignment and returns the frame's words (copying when misaligned).
Result<kj::ArrayPtr<const ::capnp::word>> FrameWords(FrameStorage& storage) {
  const size_t size = storage.frame.size();
  if (size == 0) return InvalidArgument("empty frame");
  if (size > kMaxFrameBytes) {
    return InvalidArgument("frame of " + std::to_string(size) + " bytes exceeds the limit of " +
                           std::to_string(kMaxFrameBytes));
  }
  if (size % sizeof(::capnp::word) != 0) {
    return InvalidArgument("frame of " + std::to_string(size) +
                           " bytes is not a whole number of 8-byte words (truncated?)");
  }
  const void* data = storage.frame.data();
  if (reinterpret_cast<uintptr_t>(data) % alignof(::capnp::word) != 0) {
    storage.aligned.resize(size / sizeof(::capnp::word));
    std::memcpy(storage.aligned.data(), data, size);
    data = storage.aligned.data();
  }
  return kj::ArrayPtr<const ::capnp::word>(static_cast<const ::capnp::word*>(data),
                                           size / sizeof(::capnp::word));
}

std::string ToString(::capnp::Text::Reader text) { return std::string(text.cStr(), text.size()); }

template <typename T>
Result<std::span<const T>> DataAs(::capnp::Data::Reader data, std::string_view what) {
  if (data.size() % sizeof(T) != 0) {
    return InvalidArgument(std::string(what) + " holds " + std::to_string(data.size()) +
                           " bytes, not a multiple of " + std::to_string(sizeof(T)));
  }
  if (reinterpret_cast<uintptr_t>(data.begin()) % alignof(T) != 0) {
    return InvalidArgument(std::string(what) + " is misaligned");
  }
  return std::span<const T>(reinterpret_cast<const T*>(data.begin()), data.size() / sizeof(T));
}

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

schema::RowFormat ToSchema(RowFormat format) {
  return format == RowFormat::kF16 ? schema::RowFormat::F16 : schema::RowFormat::F32;
}

size_t BytesPerValue(RowFormat format) { return format == RowFormat::kF16 ? 2 : 4; }

void CopyInto(::capnp::Data::Builder out, const void* src, size_t bytes) {
  if (bytes > 0) std::memcpy(out.begin(), src, bytes);
}

// Serialises a builder into a single frame (one copy).
Frame Finish(::capnp::MessageBuilder& builder) {
  const size_t words = ::capnp::computeSerializedSizeInWords(builder);
  Frame frame(words * sizeof(::capnp::word));
  kj::ArrayOutputStream out(kj::arrayPtr(static_cast<kj::byte*>(frame.data()), frame.size()));
  ::capnp::writeMessage(out, builder);
  return frame;
}

// Words for a first segment big enough to hold `payload_bytes` plus headers in one piece.
uint32_t FirstSegmentWords(size_t payload_bytes) {
  return static_cast<uint32_t>(payload_bytes / sizeof(::capnp::word) + 64);
}

// Builds a message with bulk arrays straight into the memory the outgoing frame will own, so the
// bulk bytes are written once and neither zeroed first nor copied by serialisation.
//
// Cap'n Proto allocates objects one after another in a segment, and it needs the memory it
// allocates zeroed. A FrameBuilder zeroes only the first `header_words` of its single segment:
// callers set every small field first and allocate the bulk Data blobs last (with InitBulk, which
// checks that the small objects fit in the zeroed words and zeroes each blob's padding), and they
// write every byte of each blob. A message that outgrows the planned segment still encodes
// correctly, through further zeroed segments and a copy.
class FrameBuilder final : public ::capnp::MessageBuilder {
 public:
  FrameBuilder(size_t bulk_bytes, size_t header_words)
      : header_words_(header_words),
        segment_words_(header_words +
                       (bulk_bytes + sizeof(::capnp::word) - 1) / sizeof(::capnp::word)) {}
  ~FrameBuilder() noexcept(false) override { std::free(buffer_); }

  kj::ArrayPtr<::capnp::word> allocateSegment(unsigned minimum_words) override {
    if (buffer_ == nullptr && minimum_words <= segment_words_) {
      // One word in front for the segment table of the serialised form.
      buffer_ =
          static_cast<::capnp::word*>(std::malloc((1 + segment_words_) * sizeof(::capnp::word)));
      if (buffer_ == nullptr) throw std::bad_alloc();
      std::memset(buffer_, 0, (1 + header_words_) * sizeof(::capnp::word));
      return kj::arrayPtr(buffer_ + 1, segment_words_);
    }
    overflow_.push_back(kj::heapArray<::capnp::word>(minimum_words));
    std::memset(overflow_.back().begin(), 0, minimum_words * sizeof(::capnp::word));
    return overflow_.back();
  }

  // A bulk blob of `bytes` in `init`'s result: must come after every small object.
  template <typename InitFn>
  kj::byte* InitBulk(size_t bytes, InitFn&& init) {
    ::capnp::Data::Builder blob = init(static_cast<unsigned>(bytes));
    if (bytes == 0) return blob.begin();
    const auto* start = reinterpret_cast<const ::capnp::word*>(blob.begin());
    if (!bulk_started_ && overflow_.empty()) {
      // Everything before the first blob is small objects: they must lie in the zeroed words.
      EMBER_CHECK(start <= buffer_ + 1 + header_words_, "a message's small fields outgrew the",
                  header_words_, "zeroed words planned for them");
    }
    bulk_started_ = true;
    // The padding up to the next word is not part of the blob and must read as zero.
    const size_t padded =
        (bytes + sizeof(::capnp::word) - 1) / sizeof(::capnp::word) * sizeof(::capnp::word);
    std::memset(blob.begin() + bytes, 0, padded - bytes);
    return blob.begin();
  }

  // The serialised message as one frame that takes over the memory (or a copy, after overflow).
  Frame Finish() {
    auto segments = getSegmentsForOutput();
    if (segments.size() != 1 || segments[0].begin() != buffer_ + 1) return CopyOut();
    auto* table = reinterpret_cast<uint32_t*>(buffer_);
    table[0] = 0;  // segment count - 1
    table[1] = static_cast<uint32_t>(segments[0].size());
    const size_t bytes = (1 + segments[0].size()) * sizeof(::capnp::word);
    Frame frame = Frame::AdoptMalloced(buffer_, bytes);
    buffer_ = nullptr;  // the frame frees it
    return frame;
  }

 private:
  Frame CopyOut();

  const size_t header_words_;
  const size_t segment_words_;
  ::capnp::word* buffer_ = nullptr;
  bool bulk_started_ = false;
  std::vector<kj::Array<::capnp::word>> overflow_;
};

Frame FrameBuilder::CopyOut() { return wire::Finish(*this); }

// Words the small fields of a request or response take, with a table name of `name_bytes`.
size_t HeaderWords(size_t name_bytes) { return 48 + name_bytes / sizeof(::capnp::word); }

schema::Request::Builder InitRequest(::capnp::MessageBuilder& builder,
                                     const RequestHeader& header) {
  auto request = builder.initRoot<schema::Request>();
  request.setVersion(kProtocolVersion);
  request.setRequestId(header.request_id);
  request.setEpoch(header.epoch);
  return request;
}

schema::Response::Builder InitResponse(::capnp::MessageBuilder& builder, uint64_t request_id,
                                       uint64_t epoch) {
  auto response = builder.initRoot<schema::Response>();
  response.setRequestId(request_id);
  response.setEpoch(epoch);
  response.setStatus(schema::StatusCode::OK);
  return response;
}

void WriteTableSpec(schema::TableSpec::Builder out, const TableSpec& spec) {
  out.setName(spec.name);
  out.setDim(spec.dim);
  out.setSeed(spec.seed);
  out.setAdmitAfter(spec.admit_after);
  out.setTtlSeconds(spec.ttl_seconds);
  auto opt = out.initOptimizer();
  opt.setKind(static_cast<schema::OptimizerSpec::Kind>(spec.optimizer.kind));
  opt.setLearningRate(spec.optimizer.learning_rate);
  opt.setInitialAccumulator(spec.optimizer.initial_accumulator);
  opt.setEpsilon(spec.optimizer.epsilon);
  opt.setBeta1(spec.optimizer.beta1);
  opt.setBeta2(spec.optimizer.beta2);
  opt.setL1(spec.optimizer.l1);
  opt.setL2(spec.optimizer.l2);
  opt.setFtrlBeta(spec.optimizer.ftrl_beta);
  auto init = out.initInitializer();
  init.setKind(static_cast<schema::InitializerSpec::Kind>(spec.initializer.kind));
  init.setMean(spec.initializer.mean);
  init.setStddev(spec.initializer.stddev);
  init.setLow(spec.initializer.low);
  init.setHigh(spec.initializer.high);
}

Result<TableSpec> ReadTableSpec(schema::TableSpec::Reader in) {
  TableSpec spec;
  spec.name = ToString(in.getName());
  spec.dim = in.getDim();
  spec.seed = in.getSeed();
  spec.admit_after = in.getAdmitAfter();
  spec.ttl_seconds = in.getTtlSeconds();
  auto opt = in.getOptimizer();
  const auto opt_kind = static_cast<uint16_t>(opt.getKind());
  if (opt_kind > static_cast<uint16_t>(OptimizerKind::kFtrl)) {
    return InvalidArgument("table '" + spec.name + "': unknown optimizer kind " +
                           std::to_string(opt_kind));
  }
  spec.optimizer.kind = static_cast<OptimizerKind>(opt_kind);
  spec.optimizer.learning_rate = opt.getLearningRate();
  spec.optimizer.initial_accumulator = opt.getInitialAccumulator();
  spec.optimizer.epsilon = opt.getEpsilon();
  spec.optimizer.beta1 = opt.getBeta1();
  spec.optimizer.beta2 = opt.getBeta2();
  spec.optimizer.l1 = opt.getL1();
  spec.optimizer.l2 = opt.getL2();
  spec.optimizer.ftrl_beta = opt.getFtrlBeta();
  auto init = in.getInitializer();
  const auto init_kind = static_cast<uint16_t>(init.getKind());
  if (init_kind > static_cast<uint16_t>(InitializerKind::kUniform)) {
    return InvalidArgument("table '" + spec.name + "': unknown initializer kind " +
                           std::to_string(init_kind));
  }
  spec.initializer.kind = static_cast<InitializerKind>(init_kind);
  spec.initializer.mean = init.getMean();
  spec.initializer.stddev = init.getStddev();
  spec.initializer.low = init.getLow();
  spec.initializer.high = init.getHigh();
  return spec;
}

void WriteRouting(schema::RoutingTable::Builder out, const RoutingTable& routing) {
  out.setEpoch(routing.epoch);
  out.setNumPartitions(routing.num_partitions);
  auto servers = out.initServers(static_cast<unsigned>(routing.servers.size()));
  for (size_t i = 0; i < routing.servers.size(); ++i) {
    servers[i].setId(routing.servers[i].id);
    servers[i].setEndpoint(routing.servers[i].endpoint);
  }
  CopyInto(out.initOwners(routing.owners.size() * sizeof(uint32_t)), routing.owners.data(),
           routing.owners.size() * sizeof(uint32_t));
}

Result<RoutingTable> ReadRouting(schema::RoutingTable::Reader in) {
  RoutingTable routing;
  routing.epoch = in.getEpoch();
  routing.num_partitions = in.getNumPartitions();
  for (auto server : in.getServers()) {
    routing.servers.push_back(ServerInfo{server.getId(), ToString(server.getEndpoint())});
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

MoveOrder ReadMove(schema::PartitionMove::Reader in) {
  return MoveOrder{in.getPartition(), in.getFrom(), in.getTo()};
}

void WriteMove(schema::PartitionMove::Builder out, const MoveOrder& move) {
  out.setPartition(move.partition);
  out.setFrom(move.from);
  out.setTo(move.to);
}

Result<RequestBody> ReadRequestBody(schema::Request::Reader request, FrameStorage& storage) {
  switch (request.which()) {
    case schema::Request::PING:
      return RequestBody(PingRequest{});
    case schema::Request::STATS:
      return RequestBody(StatsRequest{});
    case schema::Request::GET_ROUTING:
      return RequestBody(GetRoutingRequest{});
    case schema::Request::PULL: {
      auto pull = request.getPull();
      PullRequest out;
      out.table = ToString(pull.getTable());
      ASSIGN_OR_RETURN(out.keys, DataAs<uint64_t>(pull.getKeys(), "pull keys"));
      switch (pull.getRowFormat()) {
        case schema::RowFormat::F32:
          out.row_format = RowFormat::kF32;
          break;
        case schema::RowFormat::F16:
          out.row_format = RowFormat::kF16;
          break;
        default:
          return InvalidArgument("pull asks for an unknown row format");
      }
      return RequestBody(std::move(out));
    }
    case schema::Request::PUSH: {
      auto push = request.getPush();
      PushRequest out;
      out.table = ToString(push.getTable());
      ASSIGN_OR_RETURN(out.keys, DataAs<uint64_t>(push.getKeys(), "push keys"));
      ASSIGN_OR_RETURN(out.gradients, RowsAs(push.getGradients(), push.getGradientFormat(), storage,
                                             "push gradients"));
      out.clock = push.getClock();
      out.trainer = push.getTrainer();
      out.deferred = push.getDeferred();
      out.sender = PushSender{push.getSender(), push.getAckedBelow()};
      return RequestBody(std::move(out));
    }
    case schema::Request::REGISTER_SERVER:
      return RequestBody(RegisterServerRequest{ToString(request.getRegisterServer().getEndpoint()),
                                               request.getRegisterServer().getJoin()});
    case schema::Request::REGISTER_TRAINER:
      return RequestBody(RegisterTrainerRequest{ToString(request.getRegisterTrainer().getName())});
    case schema::Request::BARRIER: {
      auto barrier = request.getBarrier();
      return RequestBody(BarrierRequest{ToString(barrier.getName()), barrier.getCount()});
    }
    case schema::Request::APPLY_CLOCK: {
      auto apply = request.getApplyClock();
      ApplyClockRequest out;
      out.clock = apply.getClock();
      ASSIGN_OR_RETURN(auto trainers, DataAs<uint32_t>(apply.getTrainers(), "apply trainers"));
      out.trainers.assign(trainers.begin(), trainers.end());
      switch (apply.getCombine()) {
        case schema::ApplyClock::Combine::MEAN: out.combine = Combine::kMean; break;
        case schema::ApplyClock::Combine::SUM: out.combine = Combine::kSum; break;
        default: return InvalidArgument("apply-clock names an unknown combine rule");
      }
      return RequestBody(std::move(out));
    }
    case schema::Request::TRAINER_CLOCK: {
      auto clock = request.getTrainerClock();
      return RequestBody(TrainerClockRequest{clock.getTrainer(), clock.getClock(), clock.getLeave()});
    }
    case schema::Request::HEARTBEAT:
      return RequestBody(HeartbeatRequest{request.getHeartbeat()});
    case schema::Request::CHECKPOINT: {
      auto checkpoint = request.getCheckpoint();
      CheckpointRequest out;
      out.dir = ToString(checkpoint.getDir());
      switch (checkpoint.getAction()) {
        case schema::Checkpoint::Action::WRITE: out.action = CheckpointAction::kWrite; break;
        case schema::Checkpoint::Action::RESTORE: out.action = CheckpointAction::kRestore; break;
        case schema::Checkpoint::Action::VERIFY: out.action = CheckpointAction::kVerify; break;
        default: return InvalidArgument("checkpoint names an unknown action");
      }
      return RequestBody(std::move(out));
    }
    case schema::Request::CHECKPOINT_CUT: {
      auto cut = request.getCheckpointCut();
      CheckpointCutRequest out{cut.getTrainer(), cut.getClock(), false, ToString(cut.getError())};
      switch (cut.getPhase()) {
        case schema::CheckpointCut::Phase::ARRIVE: out.done = false; break;
        case schema::CheckpointCut::Phase::DONE: out.done = true; break;
        default: return InvalidArgument("checkpoint-cut names an unknown phase");
      }
      return RequestBody(std::move(out));
    }
    case schema::Request::CHECKPOINT_NOW:
      return RequestBody(CheckpointNowRequest{ToString(request.getCheckpointNow().getDir())});
    case schema::Request::SERVER_HEARTBEAT:
      return RequestBody(ServerHeartbeatRequest{request.getServerHeartbeat()});
    case schema::Request::MOVE_DECISION: {
      auto decision = request.getMoveDecision();
      return RequestBody(MoveDecisionRequest{ReadMove(decision.getMove()), decision.getCommit(),
                                             ToString(decision.getReason())});
    }
    case schema::Request::DRAIN:
      return RequestBody(DrainRequest{request.getDrain()});
    case schema::Request::CLUSTER_STATUS:
      return RequestBody(ClusterStatusRequest{});
    case schema::Request::PARTITION_TRANSFER: {
      auto transfer = request.getPartitionTransfer();
      PartitionTransferRequest out{transfer.getPartition(), TransferPhase::kCopy};
      switch (transfer.getPhase()) {
        case schema::PartitionTransfer::Phase::COPY: out.phase = TransferPhase::kCopy; break;
        case schema::PartitionTransfer::Phase::HANDOVER: out.phase = TransferPhase::kHandover; break;
        case schema::PartitionTransfer::Phase::RELEASE: out.phase = TransferPhase::kRelease; break;
        case schema::PartitionTransfer::Phase::RESUME: out.phase = TransferPhase::kResume; break;
        default: return InvalidArgument("partition-transfer names an unknown phase");
      }
      return RequestBody(out);
    }
  }
  return InvalidArgument("unknown request kind " +
                         std::to_string(static_cast<unsigned>(request.which())));
}

Result<ResponseBody> ReadResponseBody(schema::Response::Reader response, FrameStorage& storage) {
  switch (response.which()) {
    case schema::Response::NONE:
      return ResponseBody(NoPayload{});
    case schema::Response::PULL: {
      ASSIGN_OR_RETURN(auto rows,
                       RowsAs(response.getPull(), response.getRowFormat(), storage, "pulled rows"));
      return ResponseBody(rows);
    }
    case schema::Response::STATS: {
      auto in = response.getStats();
      ServerStats stats;
      stats.server_id = in.getServerId();
      for (auto t : in.getTables()) {
        stats.tables.push_back(TableStats{ToString(t.getName()), t.getRows(), t.getBytes(),
                                          t.getResidentRows(), t.getDiskBytes(), t.getHits(),
                                          t.getMisses(), t.getEvictions(), t.getNotAdmitted(),
                                          t.getUpdatesDropped(), t.getExpired()});
      }
      stats.pull_requests = in.getPullRequests();
      stats.push_requests = in.getPushRequests();
      stats.keys_pulled = in.getKeysPulled();
      stats.keys_pushed = in.getKeysPushed();
      stats.errors = in.getErrors();
      stats.partitions_owned = in.getPartitionsOwned();
      return ResponseBody(std::move(stats));
    }
    case schema::Response::REGISTRATION: {
      auto in = response.getRegistration();
      Registration registration;
      registration.id = in.getId();
      for (auto t : in.getTables()) {
        ASSIGN_OR_RETURN(auto spec, ReadTableSpec(t));
        registration.tables.push_back(std::move(spec));
      }
      ASSIGN_OR_RETURN(registration.routing, ReadRouting(in.getRouting()));
      registration.clock = in.getClock();
      return ResponseBody(std::move(registration));
    }
    case schema::Response::ROUTING: {
      ASSIGN_OR_RETURN(auto routing, ReadRouting(response.getRouting()));
      return ResponseBody(std::move(routing));
    }
    case schema::Response::CLOCK_GRANT: {
      auto in = response.getClockGrant();
      ClockGrant grant;
      grant.clock = in.getClock();
      grant.min_clock = in.getMinClock();
      ASSIGN_OR_RETURN(auto trainers, DataAs<uint32_t>(in.getTrainers(), "granted trainers"));
      grant.trainers.assign(trainers.begin(), trainers.end());
      grant.cut = CutInfo{in.getCutClock(), ToString(in.getCutDir()), in.getCutKeep(), false};
      return ResponseBody(std::move(grant));
    }
    case schema::Response::CUT_INFO: {
      auto in = response.getCutInfo();
      return ResponseBody(
          CutInfo{in.getClock(), ToString(in.getDir()), in.getKeep(), in.getCoordinate()});
    }
    case schema::Response::SERVER_ORDERS: {
      auto in = response.getServerOrders();
      ServerOrders orders;
      ASSIGN_OR_RETURN(orders.routing, ReadRouting(in.getRouting()));
      for (auto move : in.getMoves()) orders.moves.push_back(ReadMove(move));
      orders.exit = in.getExit();
      return ResponseBody(std::move(orders));
    }
    case schema::Response::CLUSTER_STATUS: {
      auto in = response.getClusterStatus();
      ClusterStatus status;
      ASSIGN_OR_RETURN(status.routing, ReadRouting(in.getRouting()));
      for (auto s : in.getServers()) {
        status.servers.push_back(ServerStatus{s.getId(), ToString(s.getEndpoint()),
                                              ToString(s.getState()), s.getPartitions()});
      }
      status.moves_in_flight = in.getMovesInFlight();
      status.moves_planned = in.getMovesPlanned();
      status.moves_done = in.getMovesDone();
      return ResponseBody(std::move(status));
    }
    case schema::Response::PARTITION_DATA: {
      ASSIGN_OR_RETURN(auto bytes, DataAs<uint8_t>(response.getPartitionData(), "partition data"));
      return ResponseBody(PartitionData{bytes});
    }
  }
  return InvalidArgument("unknown response kind " +
                         std::to_string(static_cast<unsigned>(response.which())));
}

}  // namespace

std::string_view RequestKindName(const RequestBody& body) {
  struct Namer {
    std::string_view operator()(const PingRequest&) { return "ping"; }
    std::string_view operator()(const PullRequest&) { return "pull"; }
    std::string_view operator()(const PushRequest&) { return "push"; }
    std::string_view operator()(const StatsRequest&) { return "stats"; }
    std::string_view operator()(const RegisterServerRequest&) { return "register-server"; }
    std::string_view operator()(const RegisterTrainerRequest&) { return "register-trainer"; }
    std::string_view operator()(const GetRoutingRequest&) { return "get-routing"; }
    std::string_view operator()(const BarrierRequest&) { return "barrier"; }
    std::string_view operator()(const ApplyClockRequest&) { return "apply-clock"; }
    std::string_view operator()(const TrainerClockRequest&) { return "trainer-clock"; }
    std::string_view operator()(const HeartbeatRequest&) { return "heartbeat"; }
    std::string_view operator()(const CheckpointRequest&) { return "checkpoint"; }
    std::string_view operator()(const CheckpointCutRequest&) { return "checkpoint-cut"; }
    std::string_view operator()(const CheckpointNowRequest&) { return "checkpoint-now"; }
    std::string_view operator()(const ServerHeartbeatRequest&) { return "server-heartbeat"; }
    std::string_view operator()(const MoveDecisionRequest&) { return "move-decision"; }
    std::string_view operator()(const DrainRequest&) { return "drain"; }
    std::string_view operator()(const ClusterStatusRequest&) { return "cluster-status"; }
    std::string_view operator()(const PartitionTransferRequest&) { return "partition-transfer"; }
  };
  return std::visit(Namer{}, body);
}

Result<DecodedRequest> DecodeRequest(Frame frame) {
  auto storage = std::make_shared<FrameStorage>(std::move(frame));
  ASSIGN_OR_RETURN(auto words, FrameWords(*storage));
  try {
    ::capnp::FlatArrayMessageReader reader(words, DecodeOptions());
    auto root = reader.getRoot<schema::Request>();
    DecodedRequest decoded;
    decoded.version = root.getVersion();
    if (decoded.version != kProtocolVersion) {
      return InvalidArgument("protocol version " + std::to_string(decoded.version) +
                             " is not supported (this build speaks " +
                             std::to_string(kProtocolVersion) + ")");
    }
    decoded.header.request_id = root.getRequestId();
    decoded.header.epoch = root.getEpoch();
    ASSIGN_OR_RETURN(decoded.body, ReadRequestBody(root, *storage));
    decoded.storage = std::move(storage);
    return decoded;
  } catch (const kj::Exception& e) {
    return InvalidArgument("malformed request frame: " + std::string(e.getDescription().cStr()));
  }
}

Result<DecodedResponse> DecodeResponse(Frame frame) {
  auto storage = std::make_shared<FrameStorage>(std::move(frame));
  ASSIGN_OR_RETURN(auto words, FrameWords(*storage));
  try {
    ::capnp::FlatArrayMessageReader reader(words, DecodeOptions());
    auto root = reader.getRoot<schema::Response>();
    DecodedResponse decoded;
    decoded.request_id = root.getRequestId();
    decoded.epoch = root.getEpoch();
    const auto code = static_cast<uint16_t>(root.getStatus());
    if (code > static_cast<uint16_t>(StatusCode::kInternal)) {
      return InvalidArgument("response carries unknown status code " + std::to_string(code));
    }
    if (code != 0)
      decoded.status = Status(static_cast<StatusCode>(code), ToString(root.getMessage()));
    ASSIGN_OR_RETURN(decoded.body, ReadResponseBody(root, *storage));
    decoded.storage = std::move(storage);
    return decoded;
  } catch (const kj::Exception& e) {
    return InvalidArgument("malformed response frame: " + std::string(e.getDescription().cStr()));
  }
}

Frame EncodePing(const RequestHeader& header) {
  ::capnp::MallocMessageBuilder builder(64);
  InitRequest(builder, header).setPing();
  return Finish(builder);
}

Frame EncodeStatsRequest(const RequestHeader& header) {
  ::capnp::MallocMessageBuilder builder(64);
  InitRequest(builder, header).setStats();
  return Finish(builder);
}

Frame EncodeGetRouting(const RequestHeader& header) {
  ::capnp::MallocMessageBuilder builder(64);
  InitRequest(builder, header).setGetRouting();
  return Finish(builder);
}

Frame EncodePullSubset(const RequestHeader& header, std::string_view table,
                                std::span<const uint64_t> keys, std::span<const uint32_t> positions,
                                RowFormat row_format) {
  const size_t n = positions.empty() ? keys.size() : positions.size();
  FrameBuilder builder(n * sizeof(uint64_t), HeaderWords(table.size()));
  auto pull = InitRequest(builder, header).initPull();
  pull.setTable(::capnp::Text::Reader(table.data(), table.size()));
  pull.setRowFormat(ToSchema(row_format));
  auto* dst = reinterpret_cast<uint64_t*>(
      builder.InitBulk(n * sizeof(uint64_t), [&](unsigned b) { return pull.initKeys(b); }));
  if (positions.empty()) {
    if (n > 0) std::memcpy(dst, keys.data(), n * sizeof(uint64_t));
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] = keys[positions[i]];
  }
  return builder.Finish();
}

Frame EncodePull(const RequestHeader& header, std::string_view table,
                          std::span<const uint64_t> keys) {
  return EncodePullSubset(header, table, keys, {}, RowFormat::kF32);
}

Frame EncodePushSubset(const RequestHeader& header, std::string_view table,
                                std::span<const uint64_t> keys, std::span<const float> gradients,
                                uint32_t dim, std::span<const uint32_t> positions,
                                uint64_t clock, RowFormat gradient_format, uint32_t trainer,
                                bool deferred, const PushSender& sender) {
  const size_t n = positions.empty() ? keys.size() : positions.size();
  const size_t grad_values = positions.empty() ? gradients.size() : n * dim;
  const size_t value_bytes = BytesPerValue(gradient_format);
  // Two blobs, each padded to a word.
  FrameBuilder builder(n * sizeof(uint64_t) + grad_values * value_bytes + sizeof(::capnp::word),
                       HeaderWords(table.size()));
  auto push = InitRequest(builder, header).initPush();
  push.setTable(::capnp::Text::Reader(table.data(), table.size()));
  push.setClock(clock);
  push.setTrainer(trainer);
  push.setDeferred(deferred);
  push.setSender(sender.id);
  push.setAckedBelow(sender.acked_below);
  push.setGradientFormat(ToSchema(gradient_format));
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
    for (size_t i = 0; i < n; ++i) {
      key_dst[i] = keys[positions[i]];
      put_values(gradients.data() + size_t{positions[i]} * dim, dim, i * dim);
    }
  }
  return builder.Finish();
}

Frame EncodePush(const RequestHeader& header, std::string_view table,
                          std::span<const uint64_t> keys, std::span<const float> gradients,
                          uint64_t clock) {
  return EncodePushSubset(header, table, keys, gradients, 0, {}, clock, RowFormat::kF32);
}

Frame EncodeRegisterServer(const RequestHeader& header, std::string_view endpoint,
                                    bool join) {
  ::capnp::MallocMessageBuilder builder(64);
  auto out = InitRequest(builder, header).initRegisterServer();
  out.setEndpoint(::capnp::Text::Reader(endpoint.data(), endpoint.size()));
  out.setJoin(join);
  return Finish(builder);
}

Frame EncodeRegisterTrainer(const RequestHeader& header, std::string_view name) {
  ::capnp::MallocMessageBuilder builder(64);
  InitRequest(builder, header)
      .initRegisterTrainer()
      .setName(::capnp::Text::Reader(name.data(), name.size()));
  return Finish(builder);
}

Frame EncodeBarrier(const RequestHeader& header, std::string_view name, uint32_t count) {
  ::capnp::MallocMessageBuilder builder(64);
  auto barrier = InitRequest(builder, header).initBarrier();
  barrier.setName(::capnp::Text::Reader(name.data(), name.size()));
  barrier.setCount(count);
  return Finish(builder);
}

Frame EncodeStatusResponse(uint64_t request_id, uint64_t epoch, const Status& status) {
  ::capnp::MallocMessageBuilder builder(64);
  auto response = InitResponse(builder, request_id, epoch);
  response.setStatus(static_cast<schema::StatusCode>(status.code()));
  response.setMessage(::capnp::Text::Reader(status.message().data(), status.message().size()));
  response.setNone();
  return Finish(builder);
}

Frame EncodePullResponse(uint64_t request_id, uint64_t epoch, size_t num_floats,
                                  const std::function<Status(std::span<float>)>& fill,
                                  RowFormat row_format) {
  FrameBuilder builder(num_floats * BytesPerValue(row_format), HeaderWords(0));
  auto response = InitResponse(builder, request_id, epoch);
  response.setRowFormat(ToSchema(row_format));
  kj::byte* rows = builder.InitBulk(num_floats * BytesPerValue(row_format),
                                    [&](unsigned b) { return response.initPull(b); });
  if (row_format == RowFormat::kF32) {
    Status status = fill(std::span<float>(reinterpret_cast<float*>(rows), num_floats));
    if (!status.ok()) return EncodeStatusResponse(request_id, epoch, status);
  } else {
    // Rows are read into float32 scratch once, then narrowed into the frame.
    thread_local std::vector<float> scratch;
    scratch.resize(num_floats);
    Status status = fill(scratch);
    if (!status.ok()) return EncodeStatusResponse(request_id, epoch, status);
    FloatsToHalves(scratch.data(), num_floats, reinterpret_cast<uint16_t*>(rows));
  }
  return builder.Finish();
}

Frame EncodeStatsResponse(uint64_t request_id, uint64_t epoch, const ServerStats& stats) {
  ::capnp::MallocMessageBuilder builder(256);
  auto out = InitResponse(builder, request_id, epoch).initStats();
  out.setServerId(stats.server_id);
  auto tables = out.initTables(static_cast<unsigned>(stats.tables.size()));
  for (size_t i = 0; i < stats.tables.size(); ++i) {
    tables[i].setName(stats.tables[i].name);
    tables[i].setRows(stats.tables[i].rows);
    tables[i].setBytes(stats.tables[i].bytes);
    tables[i].setResidentRows(stats.tables[i].resident_rows);
    tables[i].setDiskBytes(stats.tables[i].disk_bytes);
    tables[i].setHits(stats.tables[i].hits);
    tables[i].setMisses(stats.tables[i].misses);
    tables[i].setEvictions(stats.tables[i].evictions);
    tables[i].setNotAdmitted(stats.tables[i].not_admitted);
    tables[i].setUpdatesDropped(stats.tables[i].updates_dropped);
    tables[i].setExpired(stats.tables[i].expired);
  }
  out.setPullRequests(stats.pull_requests);
  out.setPushRequests(stats.push_requests);
  out.setKeysPulled(stats.keys_pulled);
  out.setKeysPushed(stats.keys_pushed);
  out.setErrors(stats.errors);
  out.setPartitionsOwned(stats.partitions_owned);
  return Finish(builder);
}

Frame EncodeRegistrationResponse(uint64_t request_id, const Registration& registration) {
  ::capnp::MallocMessageBuilder builder(FirstSegmentWords(registration.routing.owners.size() * 4));
  auto out = InitResponse(builder, request_id, registration.routing.epoch).initRegistration();
  out.setId(registration.id);
  auto tables = out.initTables(static_cast<unsigned>(registration.tables.size()));
  for (size_t i = 0; i < registration.tables.size(); ++i) {
    WriteTableSpec(tables[i], registration.tables[i]);
  }
  WriteRouting(out.initRouting(), registration.routing);
  out.setClock(registration.clock);
  return Finish(builder);
}

Frame EncodeRoutingResponse(uint64_t request_id, const RoutingTable& routing) {
  ::capnp::MallocMessageBuilder builder(FirstSegmentWords(routing.owners.size() * 4));
  WriteRouting(InitResponse(builder, request_id, routing.epoch).initRouting(), routing);
  return Finish(builder);
}

// ---- Clocks of synchronised training ----

namespace {

void CopyIds(::capnp::Data::Builder out, const std::vector<uint32_t>& ids) {
  CopyInto(out, ids.data(), ids.size() * sizeof(uint32_t));
}

}  // namespace

Frame EncodeApplyClock(const RequestHeader& header, const ApplyClockRequest& apply) {
  ::capnp::MallocMessageBuilder builder(FirstSegmentWords(apply.trainers.size() * 4));
  auto out = InitRequest(builder, header).initApplyClock();
  out.setClock(apply.clock);
  out.setCombine(apply.combine == Combine::kSum ? schema::ApplyClock::Combine::SUM
                                                : schema::ApplyClock::Combine::MEAN);
  CopyIds(out.initTrainers(apply.trainers.size() * sizeof(uint32_t)), apply.trainers);
  return Finish(builder);
}

Frame EncodeTrainerClock(const RequestHeader& header, const TrainerClockRequest& clock) {
  ::capnp::MallocMessageBuilder builder(64);
  auto out = InitRequest(builder, header).initTrainerClock();
  out.setTrainer(clock.trainer);
  out.setClock(clock.clock);
  out.setLeave(clock.leave);
  return Finish(builder);
}

Frame EncodeHeartbeat(const RequestHeader& header, uint32_t trainer) {
  ::capnp::MallocMessageBuilder builder(64);
  InitRequest(builder, header).setHeartbeat(trainer);
  return Finish(builder);
}

Frame EncodeCheckpoint(const RequestHeader& header, const CheckpointRequest& checkpoint) {
  ::capnp::MallocMessageBuilder builder(64 + checkpoint.dir.size() / 8);
  auto out = InitRequest(builder, header).initCheckpoint();
  out.setDir(checkpoint.dir);
  switch (checkpoint.action) {
    case CheckpointAction::kWrite: out.setAction(schema::Checkpoint::Action::WRITE); break;
    case CheckpointAction::kRestore: out.setAction(schema::Checkpoint::Action::RESTORE); break;
    case CheckpointAction::kVerify: out.setAction(schema::Checkpoint::Action::VERIFY); break;
  }
  return Finish(builder);
}

Frame EncodeClockGrantResponse(uint64_t request_id, uint64_t epoch,
                                        const ClockGrant& grant) {
  ::capnp::MallocMessageBuilder builder(FirstSegmentWords(grant.trainers.size() * 4));
  auto out = InitResponse(builder, request_id, epoch).initClockGrant();
  out.setClock(grant.clock);
  out.setMinClock(grant.min_clock);
  CopyIds(out.initTrainers(grant.trainers.size() * sizeof(uint32_t)), grant.trainers);
  out.setCutClock(grant.cut.clock);
  out.setCutDir(grant.cut.dir);
  out.setCutKeep(grant.cut.keep);
  return Finish(builder);
}

// ---- Checkpoint cuts ----

Frame EncodeCheckpointCut(const RequestHeader& header, const CheckpointCutRequest& cut) {
  ::capnp::MallocMessageBuilder builder(64 + cut.error.size() / 8);
  auto out = InitRequest(builder, header).initCheckpointCut();
  out.setTrainer(cut.trainer);
  out.setClock(cut.clock);
  out.setPhase(cut.done ? schema::CheckpointCut::Phase::DONE
                        : schema::CheckpointCut::Phase::ARRIVE);
  out.setError(cut.error);
  return Finish(builder);
}

Frame EncodeCheckpointNow(const RequestHeader& header, std::string_view dir) {
  ::capnp::MallocMessageBuilder builder(64 + dir.size() / 8);
  InitRequest(builder, header).initCheckpointNow().setDir(std::string(dir));
  return Finish(builder);
}

Frame EncodeCutInfoResponse(uint64_t request_id, uint64_t epoch, const CutInfo& cut) {
  ::capnp::MallocMessageBuilder builder(64 + cut.dir.size() / 8);
  auto out = InitResponse(builder, request_id, epoch).initCutInfo();
  out.setClock(cut.clock);
  out.setDir(cut.dir);
  out.setKeep(cut.keep);
  out.setCoordinate(cut.coordinate);
  return Finish(builder);
}

// ---- Server membership and partition moves ----

Frame EncodeServerHeartbeat(const RequestHeader& header, uint32_t server) {
  ::capnp::MallocMessageBuilder builder(64);
  InitRequest(builder, header).setServerHeartbeat(server);
  return Finish(builder);
}

Frame EncodeMoveDecision(const RequestHeader& header, const MoveDecisionRequest& decision) {
  ::capnp::MallocMessageBuilder builder(64 + decision.reason.size() / 8);
  auto out = InitRequest(builder, header).initMoveDecision();
  WriteMove(out.initMove(), decision.move);
  out.setCommit(decision.commit);
  out.setReason(decision.reason);
  return Finish(builder);
}

Frame EncodeDrain(const RequestHeader& header, uint32_t server) {
  ::capnp::MallocMessageBuilder builder(64);
  InitRequest(builder, header).setDrain(server);
  return Finish(builder);
}

Frame EncodeClusterStatusRequest(const RequestHeader& header) {
  ::capnp::MallocMessageBuilder builder(64);
  InitRequest(builder, header).setClusterStatus();
  return Finish(builder);
}

Frame EncodePartitionTransfer(const RequestHeader& header,
                                       const PartitionTransferRequest& transfer) {
  ::capnp::MallocMessageBuilder builder(64);
  auto out = InitRequest(builder, header).initPartitionTransfer();
  out.setPartition(transfer.partition);
  switch (transfer.phase) {
    case TransferPhase::kCopy: out.setPhase(schema::PartitionTransfer::Phase::COPY); break;
    case TransferPhase::kHandover: out.setPhase(schema::PartitionTransfer::Phase::HANDOVER); break;
    case TransferPhase::kRelease: out.setPhase(schema::PartitionTransfer::Phase::RELEASE); break;
    case TransferPhase::kResume: out.setPhase(schema::PartitionTransfer::Phase::RESUME); break;
  }
  return Finish(builder);
}

Frame EncodeServerOrdersResponse(uint64_t request_id, const ServerOrders& orders) {
  ::capnp::MallocMessageBuilder builder(
      FirstSegmentWords(orders.routing.owners.size() * 4 + orders.moves.size() * 16));
  auto out = InitResponse(builder, request_id, orders.routing.epoch).initServerOrders();
  WriteRouting(out.initRouting(), orders.routing);
  auto moves = out.initMoves(static_cast<unsigned>(orders.moves.size()));
  for (size_t i = 0; i < orders.moves.size(); ++i) WriteMove(moves[i], orders.moves[i]);
  out.setExit(orders.exit);
  return Finish(builder);
}

Frame EncodeClusterStatusResponse(uint64_t request_id, const ClusterStatus& status) {
  ::capnp::MallocMessageBuilder builder(FirstSegmentWords(status.routing.owners.size() * 4));
  auto out = InitResponse(builder, request_id, status.routing.epoch).initClusterStatus();
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
  return Finish(builder);
}

Frame EncodePartitionDataResponse(uint64_t request_id, uint64_t epoch, size_t bytes,
                                           const std::function<void(std::span<uint8_t>)>& fill) {
  ::capnp::MallocMessageBuilder builder(FirstSegmentWords(bytes));
  auto data = InitResponse(builder, request_id, epoch).initPartitionData(bytes);
  fill(std::span<uint8_t>(data.begin(), data.size()));
  return Finish(builder);
}

}  // namespace ember::wire
