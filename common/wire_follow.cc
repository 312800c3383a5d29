// The stream of changed rows on the wire (wire_follow.h): encoders, and the readers the envelope's
// decoders dispatch to.
#include <cstring>

#include "common/wire_internal.h"

namespace ember::wire {
namespace {

template <typename T>
void SetData(::capnp::Data::Builder out, std::span<const T> values) {
  if (!values.empty()) std::memcpy(out.begin(), values.data(), values.size_bytes());
}

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

Frame EncodeFollowResponse(uint64_t request_id, uint64_t epoch, const FollowedRows& followed) {
  const size_t bytes = followed.keys.size_bytes() + followed.rows.size_bytes() +
                       followed.deleted.size_bytes() +
                       4 * (followed.following.size() + followed.lost.size());
  return BuildMessage(ResponseHead{request_id, epoch}, bytes,
                      [&](schema::Response::Builder response) {
                        auto out = response.initFollowReply();
                        SetData(out.initKeys(followed.keys.size_bytes()), followed.keys);
                        SetData(out.initRows(followed.rows.size_bytes()), followed.rows);
                        SetData(out.initDeleted(followed.deleted.size_bytes()), followed.deleted);
                        SetList(out.initFollowing(followed.following.size()), followed.following);
                        SetList(out.initLost(followed.lost.size()), followed.lost);
                        out.setMore(followed.more);
                      });
}

}  // namespace ember::wire
