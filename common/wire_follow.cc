// The stream of changed rows on the wire (wire_follow.h): encoders, and the readers the envelope's
// decoders dispatch to.
#include <cstring>

#include "common/wire_internal.h"

namespace ember::wire {
namespace {

template <typename List>
void SetList(List out, const std::vector<uint32_t>& values) {
  for (size_t i = 0; i < values.size(); ++i) out.set(static_cast<unsigned>(i), values[i]);
}

template <typename List>
std::vector<uint32_t> ReadList(List in) {
  std::vector<uint32_t> out;
  out.reserve(in.size());
  for (uint32_t value : in) out.push_back(value);
  return out;
}

Result<FollowRequest> ReadFollow(schema::FollowRequest::Reader in) {
  FollowRequest out;
  out.follower = in.getFollower();
  if (out.follower == 0) return InvalidArgument("follow request with follower id 0");
  out.table = ToString(in.getTable());
  if (in.getStart().size() > kMaxStartsPerFollow) {
    return InvalidArgument("follow request starts " + std::to_string(in.getStart().size()) +
                           " partitions (at most " + std::to_string(kMaxStartsPerFollow) + ")");
  }
  out.start = ReadList(in.getStart());
  out.max_rows = in.getMaxRows();
  out.leave = in.getLeave();
  return out;
}

Result<FollowedRows> ReadFollowReply(schema::FollowReply::Reader in) {
  FollowedRows out;
  ASSIGN_OR_RETURN(out.keys, DataAs<uint64_t>(in.getKeys(), "followed keys"));
  ASSIGN_OR_RETURN(out.rows, DataAs<float>(in.getRows(), "followed rows"));
  ASSIGN_OR_RETURN(out.deleted, DataAs<uint64_t>(in.getDeleted(), "followed deletions"));
  if (out.keys.empty() != out.rows.empty() ||
      (!out.keys.empty() && out.rows.size() % out.keys.size() != 0)) {
    return InvalidArgument("followed rows: " + std::to_string(out.rows.size()) +
                           " floats are not whole rows of " + std::to_string(out.keys.size()) +
                           " keys");
  }
  out.following = ReadList(in.getFollowing());
  out.lost = ReadList(in.getLost());
  out.more = in.getMore();
  return out;
}

}  // namespace

std::optional<Result<RequestBody>> ReadFollowRequest(schema::Request::Reader request,
                                                     FrameStorage&) {
  if (request.which() != schema::Request::FOLLOW) return std::nullopt;
  return AsBody<RequestBody>(ReadFollow(request.getFollow()));
}

std::optional<Result<ResponseBody>> ReadFollowResponse(schema::Response::Reader response,
                                                       FrameStorage&) {
  if (response.which() != schema::Response::FOLLOW_REPLY) return std::nullopt;
  return AsBody<ResponseBody>(ReadFollowReply(response.getFollowReply()));
}

Frame EncodeFollow(const RequestHeader& header, const FollowRequest& follow) {
  const size_t bytes = follow.table.size() + 4 * follow.start.size();
  return BuildMessage(header, bytes, [&](schema::Request::Builder request) {
    auto out = request.initFollow();
    out.setFollower(follow.follower);
    out.setTable(TextOf(follow.table));
    SetList(out.initStart(static_cast<unsigned>(follow.start.size())), follow.start);
    out.setMaxRows(follow.max_rows);
    out.setLeave(follow.leave);
  });
}

// The rows are written once, into the frame (BuildInPlace): the small fields first, then the
// three blobs.
Frame EncodeFollowResponse(uint64_t request_id, uint64_t epoch, const FollowedRows& followed) {
  constexpr size_t kWord = sizeof(::capnp::word);
  const auto padded = [](size_t bytes) { return (bytes + kWord - 1) / kWord * kWord; };
  const size_t bulk = padded(followed.keys.size_bytes()) + padded(followed.rows.size_bytes()) +
                      padded(followed.deleted.size_bytes());
  const size_t small = padded(4 * followed.following.size()) + padded(4 * followed.lost.size());
  return BuildInPlace(
      ResponseHead{request_id, epoch}, bulk, small,
      [&](schema::Response::Builder response, FrameBuilder& builder) {
        auto out = response.initFollowReply();
        SetList(out.initFollowing(static_cast<unsigned>(followed.following.size())),
                followed.following);
        SetList(out.initLost(static_cast<unsigned>(followed.lost.size())), followed.lost);
        out.setMore(followed.more);
        const auto blob = [&](auto values, auto init) {
          kj::byte* data = builder.InitBulk(values.size_bytes(), init);
          if (!values.empty()) std::memcpy(data, values.data(), values.size_bytes());
        };
        blob(followed.keys, [&](unsigned b) { return out.initKeys(b); });
        blob(followed.rows, [&](unsigned b) { return out.initRows(b); });
        blob(followed.deleted, [&](unsigned b) { return out.initDeleted(b); });
      });
}

}  // namespace ember::wire
