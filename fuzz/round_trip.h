// The round-trip check of the wire fuzzers: what decoded is encoded again by ember's own encoder,
// and that frame must decode and encode to the very same bytes. A field an encoder and its
// decoder disagree about (a size, a format, a range) shows up as a failed decode or as bytes
// that change on the second trip.
#pragma once

#include <cstring>
#include <optional>

#include "common/check.h"
#include "common/frame.h"
#include "common/overloaded.h"
#include "common/status.h"

namespace ember::fuzz {

// `encode(decoded)` is nullopt for what it cannot re-encode faithfully (e.g. a reply carrying both
// an error and a body); `decode(frame)` is wire::DecodeRequest or wire::DecodeResponse.
template <typename Decoded, typename Decode, typename Encode>
void CheckRoundTrip(const Decoded& decoded, Decode&& decode, Encode&& encode) {
  std::optional<Frame> first = encode(decoded);
  if (!first) return;
  Frame copy(first->data(), first->size());
  auto again = decode(std::move(copy));
  EMBER_CHECK(again.ok(), "a re-encoded message does not decode:", again.status().ToString());
  std::optional<Frame> second = encode(*again);
  EMBER_CHECK(second.has_value(), "a re-decoded message cannot be encoded again");
  EMBER_CHECK(first->size() == second->size() &&
                  std::memcmp(first->data(), second->data(), first->size()) == 0,
              "a message changes on its second round trip:", first->size(), "vs", second->size(),
              "bytes");
}

}  // namespace ember::fuzz
