// Private to the wire codec (common/wire*.cc); nothing else includes it.
//
// What the topic files share: the storage a decoded message keeps alive, checked views into its
// Data fields, the routing-table codec, the per-topic readers the envelope's decoders dispatch
// to, and the one shape every encoder has: an envelope (request header or response head), a body
// filled by the caller, one frame out (BuildMessage), or, for bulk arrays, the same built in
// place in the frame's own memory (BuildInPlace with a FrameBuilder).
//
// Readers may throw kj::Exception on malformed input; DecodeRequest and DecodeResponse catch it.
#pragma once

#include <capnp/message.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/check.h"
#include "common/ember.capnp.h"
#include "common/wire.h"

namespace ember::wire {

// ---- Decoding ----

// Owns a received frame plus, when the frame was not word-aligned, an aligned copy of it.
struct FrameStorage {
  explicit FrameStorage(Frame f) : frame(std::move(f)) {}
  Frame frame;
  // kj::Array, not std::vector: with clang, Cap'n Proto's words cannot be copied or moved.
  kj::Array<::capnp::word> aligned;
  std::vector<float> widened;  // fp16 values of the frame converted to float32
};

inline std::string ToString(::capnp::Text::Reader text) {
  return std::string(text.cStr(), text.size());
}

// A Data field as an array of T: a view into the frame, checked for size and alignment.
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

// A topic's part of the decoders (common/wire_*.cc): the body of each request or response kind of
// its topic, nullopt for a kind of another topic.
using RequestReader = std::optional<Result<RequestBody>>(schema::Request::Reader request,
                                                         FrameStorage& storage);
using ResponseReader = std::optional<Result<ResponseBody>>(schema::Response::Reader response,
                                                           FrameStorage& storage);
RequestReader ReadDataPlaneRequest, ReadMembershipRequest, ReadMovesRequest, ReadFollowRequest;
ResponseReader ReadDataPlaneResponse, ReadMembershipResponse, ReadMovesResponse,
    ReadFollowResponse;

// A reader's answer for a kind it knows: `value` (a T or a Result<T>) as the Body variant.
template <typename Body, typename T>
std::optional<Result<Body>> AsBody(T value) {
  return Result<Body>(Body(std::move(value)));
}
template <typename Body, typename T>
std::optional<Result<Body>> AsBody(Result<T> result) {
  if (!result.ok()) return Result<Body>(result.status());
  return Result<Body>(Body(std::move(result).value()));
}

// ---- Encoding ----

// A string as Cap'n Proto text (copied when set).
inline ::capnp::Text::Reader TextOf(std::string_view text) {
  return ::capnp::Text::Reader(text.data(), text.size());
}

// Little-endian values as a Data field (copied when set).
template <typename T>
::capnp::Data::Reader DataOf(const std::vector<T>& values) {
  return ::capnp::Data::Reader(reinterpret_cast<const kj::byte*>(values.data()),
                               values.size() * sizeof(T));
}

// Bytes as a Data field (copied when set), and back.
inline ::capnp::Data::Reader DataOf(std::string_view bytes) {
  return ::capnp::Data::Reader(reinterpret_cast<const kj::byte*>(bytes.data()), bytes.size());
}
inline std::string BytesOf(::capnp::Data::Reader data) {
  return std::string(reinterpret_cast<const char*>(data.begin()), data.size());
}

// Serialises a builder into a single frame (one copy).
Frame Finish(::capnp::MessageBuilder& builder);

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
    if (segments.size() != 1 || segments[0].begin() != buffer_ + 1) return wire::Finish(*this);
    auto* table = reinterpret_cast<uint32_t*>(buffer_);
    table[0] = 0;  // segment count - 1
    table[1] = static_cast<uint32_t>(segments[0].size());
    const size_t bytes = (1 + segments[0].size()) * sizeof(::capnp::word);
    Frame frame = Frame::AdoptMalloced(buffer_, bytes);
    buffer_ = nullptr;  // the frame frees it
    return frame;
  }

 private:
  const size_t header_words_;
  const size_t segment_words_;
  ::capnp::word* buffer_ = nullptr;
  bool bulk_started_ = false;
  std::vector<kj::Array<::capnp::word>> overflow_;
};

// Who a response answers, and the responder's routing epoch.
struct ResponseHead {
  uint64_t request_id = 0;
  uint64_t epoch = 0;
};

// The root of a message with its envelope set: a request's version and header, or a response's
// head with status OK.
inline schema::Request::Builder InitEnvelope(::capnp::MessageBuilder& builder,
                                             const RequestHeader& header) {
  auto request = builder.initRoot<schema::Request>();
  request.setVersion(kProtocolVersion);
  request.setRequestId(header.request_id);
  request.setEpoch(header.epoch);
  return request;
}
inline schema::Response::Builder InitEnvelope(::capnp::MessageBuilder& builder,
                                              const ResponseHead& head) {
  auto response = builder.initRoot<schema::Response>();
  response.setRequestId(head.request_id);
  response.setEpoch(head.epoch);
  response.setStatus(schema::StatusCode::OK);
  return response;
}

// Every message without bulk arrays: the envelope for `head` (a RequestHeader or a ResponseHead),
// `fill(root)` sets the body, one copy into the frame. `payload_bytes`, the variable-length
// content (strings, lists, Data), sizes the first segment so that the message is one piece.
template <typename Head, typename Fill>
Frame BuildMessage(const Head& head, size_t payload_bytes, Fill&& fill) {
  ::capnp::MallocMessageBuilder builder(
      static_cast<unsigned>(64 + payload_bytes / sizeof(::capnp::word)));
  fill(InitEnvelope(builder, head));
  return Finish(builder);
}

// Every message with bulk arrays, built in place: `fill(root, builder)` sets the small fields,
// then allocates each bulk blob with builder.InitBulk and writes every byte of it. `bulk_bytes`:
// the blobs together, each padded to a word; `small_bytes`: the variable-length small content
// (a table name), which must fit in the zeroed words planned before the blobs.
template <typename Head, typename Fill>
Frame BuildInPlace(const Head& head, size_t bulk_bytes, size_t small_bytes, Fill&& fill) {
  FrameBuilder builder(bulk_bytes, 48 + small_bytes / sizeof(::capnp::word));
  fill(InitEnvelope(builder, head), builder);
  return builder.Finish();
}

// ---- Fields in both directions ----

// The plain enums that travel carry the numbers of their schema enums (checked below), so they
// convert by number; reading checks the range: nullopt for a number past `last`.
template <typename SchemaEnum, typename Plain>
SchemaEnum ToSchema(Plain value) {
  return static_cast<SchemaEnum>(value);
}
template <typename Plain, typename SchemaEnum>
std::optional<Plain> FromSchema(SchemaEnum value, Plain last) {
  if (static_cast<uint16_t>(value) > static_cast<uint16_t>(last)) return std::nullopt;
  return static_cast<Plain>(value);
}

template <typename SchemaEnum, typename Plain>
constexpr bool SameNumber(SchemaEnum a, Plain b) {
  return static_cast<uint16_t>(a) == static_cast<uint16_t>(b);
}
static_assert(SameNumber(schema::RowFormat::F32, RowFormat::kF32));
static_assert(SameNumber(schema::RowFormat::F16, RowFormat::kF16));
static_assert(SameNumber(schema::LookupRequest::MissingRows::INITIAL, MissingRows::kInitial));
static_assert(SameNumber(schema::LookupRequest::MissingRows::FLAG, MissingRows::kFlag));
static_assert(SameNumber(schema::ApplyClock::Combine::MEAN, Combine::kMean));
static_assert(SameNumber(schema::ApplyClock::Combine::SUM, Combine::kSum));
static_assert(SameNumber(schema::OptimizerSpec::Kind::SGD, OptimizerKind::kSgd));
static_assert(SameNumber(schema::OptimizerSpec::Kind::ADAGRAD, OptimizerKind::kAdagrad));
static_assert(SameNumber(schema::OptimizerSpec::Kind::ADAM, OptimizerKind::kAdam));
static_assert(SameNumber(schema::OptimizerSpec::Kind::FTRL, OptimizerKind::kFtrl));
static_assert(SameNumber(schema::InitializerSpec::Kind::ZEROS, InitializerKind::kZeros));
static_assert(SameNumber(schema::InitializerSpec::Kind::NORMAL, InitializerKind::kNormal));
static_assert(SameNumber(schema::InitializerSpec::Kind::UNIFORM, InitializerKind::kUniform));
static_assert(SameNumber(schema::Checkpoint::Action::WRITE, CheckpointAction::kWrite));
static_assert(SameNumber(schema::Checkpoint::Action::RESTORE, CheckpointAction::kRestore));
static_assert(SameNumber(schema::Checkpoint::Action::VERIFY, CheckpointAction::kVerify));
static_assert(SameNumber(schema::PartitionTransfer::Phase::COPY, TransferPhase::kCopy));
static_assert(SameNumber(schema::PartitionTransfer::Phase::HANDOVER, TransferPhase::kHandover));
static_assert(SameNumber(schema::PartitionTransfer::Phase::RELEASE, TransferPhase::kRelease));
static_assert(SameNumber(schema::PartitionTransfer::Phase::RESUME, TransferPhase::kResume));

// One field of a plain struct with its schema getter and setter: a table of them lists each
// field once for both directions.
template <typename Plain, typename Schema, typename T>
struct Field {
  T Plain::*member;
  T (Schema::Reader::*get)() const;
  void (Schema::Builder::*set)(T);
};

// A Field of a plain struct and the schema struct of the same name: EMBER_WIRE_FIELD(TableStats,
// rows, Rows) pairs TableStats::rows with schema::TableStats' getRows and setRows.
#define EMBER_WIRE_FIELD(Struct, member, Name) \
  { &Struct::member, &schema::Struct::Reader::get##Name, &schema::Struct::Builder::set##Name }

template <typename Plain, typename Schema, typename T, size_t N>
void WriteFields(const Field<Plain, Schema, T> (&fields)[N], const Plain& plain,
                 typename Schema::Builder out) {
  for (const auto& field : fields) (out.*field.set)(plain.*field.member);
}

template <typename Plain, typename Schema, typename T, size_t N>
void ReadFields(const Field<Plain, Schema, T> (&fields)[N], typename Schema::Reader in,
                Plain& plain) {
  for (const auto& field : fields) plain.*field.member = (in.*field.get)();
}

// The limits a process refused something for, in ServerStats and ClusterStatus replies.
void WriteLimitHits(::capnp::List<schema::LimitHit>::Builder out,
                    const std::vector<LimitHit>& hits);
std::vector<LimitHit> ReadLimitHits(::capnp::List<schema::LimitHit>::Reader in);
// Bytes the limit hits take beyond the fixed fields.
size_t LimitHitsBytes(const std::vector<LimitHit>& hits);

// The routing table, in Registration, RoutingTable, ServerOrders and ClusterStatus replies.
void WriteRouting(schema::RoutingTable::Builder out, const RoutingTable& routing);
Result<RoutingTable> ReadRouting(schema::RoutingTable::Reader in);
// Bytes a routing table takes beyond its fixed fields.
size_t RoutingBytes(const RoutingTable& routing);

}  // namespace ember::wire
