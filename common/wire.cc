// The envelope of the wire codec: frame checks, the two decoders that dispatch each body to its
// topic's reader (common/wire_*.cc), and the status-only response. The Cap'n Proto adapter: no
// kj::Exception leaves this file.
#include "common/wire.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>
#include <kj/io.h>

#include <cstring>

#include "common/wire_internal.h"

namespace ember::wire {
namespace {

// The decoders read every object of a message once, so a message of `words` words traverses about
// that many. The limit is twice that (and a little more for tiny frames): a frame cannot make the
// decoder walk more than it sent, e.g. a list of millions of empty structs that Cap'n Proto
// encodes in a few bytes but counts as one word each.
::capnp::ReaderOptions DecodeOptions(size_t words) {
  ::capnp::ReaderOptions options;
  options.traversalLimitInWords = 2 * words + 1024;
  options.nestingLimit = 16;
  return options;
}

// Validates size/alignment and returns `frame`'s words, copied into `aligned` when misaligned.
Result<kj::ArrayPtr<const ::capnp::word>> WordsOf(const Frame& frame,
                                                  kj::Array<::capnp::word>& aligned) {
  const size_t size = frame.size();
  if (size == 0) return InvalidArgument("empty frame");
  if (size > kMaxFrameBytes) {
    return InvalidArgument("frame of " + std::to_string(size) + " bytes exceeds the limit of " +
                           std::to_string(kMaxFrameBytes));
  }
  if (size % sizeof(::capnp::word) != 0) {
    return InvalidArgument("frame of " + std::to_string(size) +
                           " bytes is not a whole number of 8-byte words (truncated?)");
  }
  const void* data = frame.data();
  if (reinterpret_cast<uintptr_t>(data) % alignof(::capnp::word) != 0) {
    aligned = kj::heapArray<::capnp::word>(size / sizeof(::capnp::word));
    std::memcpy(aligned.begin(), data, size);
    data = aligned.begin();
  }
  return kj::ArrayPtr<const ::capnp::word>(static_cast<const ::capnp::word*>(data),
                                           size / sizeof(::capnp::word));
}

Result<kj::ArrayPtr<const ::capnp::word>> FrameWords(FrameStorage& storage) {
  return WordsOf(storage.frame, storage.aligned);
}

// The body of a status-only response (EncodeStatusResponse): none.
std::optional<Result<ResponseBody>> ReadNoPayload(schema::Response::Reader response,
                                                  FrameStorage&) {
  if (response.which() != schema::Response::NONE) return std::nullopt;
  return AsBody<ResponseBody>(NoPayload{});
}

// Every topic's readers; each kind belongs to one.
constexpr RequestReader* kRequestReaders[] = {&ReadDataPlaneRequest, &ReadMembershipRequest,
                                              &ReadMovesRequest, &ReadFollowRequest};
constexpr ResponseReader* kResponseReaders[] = {&ReadNoPayload, &ReadDataPlaneResponse,
                                                &ReadMembershipResponse, &ReadMovesResponse,
                                                &ReadFollowResponse};

// The body, from the reader that knows its kind.
template <typename Body, typename Root, typename Reader, size_t N>
Result<Body> ReadBody(Root root, FrameStorage& storage, Reader* const (&readers)[N],
                      std::string_view what) {
  for (Reader* read : readers) {
    if (auto body = read(root, storage)) return std::move(*body);
  }
  return InvalidArgument("unknown " + std::string(what) + " kind " +
                         std::to_string(static_cast<unsigned>(root.which())));
}

// Decodes a frame of root type Root: `read(root, storage, decoded)` fills the rest of `decoded`
// after the frame checks; Cap'n Proto exceptions become InvalidArgument.
template <typename Decoded, typename Root, typename Read>
Result<Decoded> Decode(Frame frame, std::string_view what, Read&& read) {
  auto storage = std::make_shared<FrameStorage>(std::move(frame));
  ASSIGN_OR_RETURN(auto words, FrameWords(*storage));
  try {
    ::capnp::FlatArrayMessageReader reader(words, DecodeOptions(words.size()));
    Decoded decoded;
    RETURN_IF_ERROR(read(reader.getRoot<Root>(), *storage, decoded));
    decoded.storage = std::move(storage);
    return decoded;
  } catch (const kj::Exception& e) {
    return InvalidArgument("malformed " + std::string(what) +
                           " frame: " + std::string(e.getDescription().cStr()));
  }
}

}  // namespace

std::string_view RequestKindName(const RequestBody& body) {
  return std::visit([](const auto& request) { return request.kName; }, body);
}

PeerRoles SendersOf(const RequestBody& body) {
  return std::visit(
      [](const auto& request) -> PeerRoles {
        if constexpr (requires { request.senders(); }) {
          return request.senders();
        } else {
          return request.kSenders;
        }
      },
      body);
}

Status CheckSender(const Peer& peer, const RequestBody& body) {
  const PeerRoles senders = SendersOf(body);
  if (peer.MaySend(senders)) return Status::Ok();
  return PermissionDenied("a '" + std::string(RequestKindName(body)) + "' request needs the role " +
                          DescribeRoles(senders) + "; this connection is " + peer.Describe() +
                          "; refused, nothing changed");
}

Result<DecodedRequest> DecodeRequest(Frame frame, uint64_t* request_id) {
  return Decode<DecodedRequest, schema::Request>(
      std::move(frame), "request",
      [request_id](schema::Request::Reader root, FrameStorage& storage,
                   DecodedRequest& decoded) -> Status {
        if (request_id != nullptr) *request_id = root.getRequestId();
        decoded.version = root.getVersion();
        if (decoded.version != kProtocolVersion) {
          return InvalidArgument("protocol version " + std::to_string(decoded.version) +
                                 " is not supported (this build speaks " +
                                 std::to_string(kProtocolVersion) + ")");
        }
        decoded.header.request_id = root.getRequestId();
        decoded.header.epoch = root.getEpoch();
        ASSIGN_OR_RETURN(decoded.body,
                         ReadBody<RequestBody>(root, storage, kRequestReaders, "request"));
        return Status::Ok();
      });
}

bool IsDataPlaneRequest(const Frame& frame) {
  kj::Array<::capnp::word> aligned;
  auto words = WordsOf(frame, aligned);
  if (!words.ok()) return false;
  try {
    ::capnp::FlatArrayMessageReader reader(*words, DecodeOptions(words->size()));
    switch (reader.getRoot<schema::Request>().which()) {
      case schema::Request::PULL:
      case schema::Request::PUSH:
      case schema::Request::LOOKUP:
      case schema::Request::HINT:
        return true;
      default:
        return false;
    }
  } catch (const kj::Exception&) {
    return false;
  }
}

Result<DecodedResponse> DecodeResponse(Frame frame) {
  return Decode<DecodedResponse, schema::Response>(
      std::move(frame), "response",
      [](schema::Response::Reader root, FrameStorage& storage, DecodedResponse& decoded) -> Status {
        decoded.request_id = root.getRequestId();
        decoded.epoch = root.getEpoch();
        const auto code = static_cast<uint16_t>(root.getStatus());
        if (code > static_cast<uint16_t>(StatusCode::kLastCode)) {
          return InvalidArgument("response carries unknown status code " + std::to_string(code));
        }
        if (code != 0) {
          decoded.status = Status(static_cast<StatusCode>(code), ToString(root.getMessage()));
        }
        ASSIGN_OR_RETURN(decoded.body,
                         ReadBody<ResponseBody>(root, storage, kResponseReaders, "response"));
        return Status::Ok();
      });
}

Frame EncodeStatusResponse(uint64_t request_id, uint64_t epoch, const Status& status) {
  return BuildMessage(ResponseHead{request_id, epoch}, status.message().size(),
                      [&](schema::Response::Builder response) {
                        response.setStatus(static_cast<schema::StatusCode>(status.code()));
                        response.setMessage(TextOf(status.message()));
                        response.setNone();
                      });
}

Frame Finish(::capnp::MessageBuilder& builder) {
  const size_t words = ::capnp::computeSerializedSizeInWords(builder);
  Frame frame(words * sizeof(::capnp::word));
  kj::ArrayOutputStream out(kj::arrayPtr(static_cast<kj::byte*>(frame.data()), frame.size()));
  ::capnp::writeMessage(out, builder);
  return frame;
}

}  // namespace ember::wire
