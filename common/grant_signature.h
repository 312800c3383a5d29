// GrantSignature: the scheduler's signature on a bsp clock grant, so that a server applies a
// clock only as the scheduler granted it (which clock, whose pushes, how combined), whoever
// asks. A trainer key can then neither run a server's clock ahead nor name the trainers whose
// pushes count.
//
// The scheduler signs each grant with an Ed25519 key derived from its own CurveZMQ secret key
// (so the same scheduler key always signs alike); servers learn the public half when they
// register, over their authenticated connection to the scheduler, and check every apply-clock
// against it. Trainers pass the grant's signature on untouched. Signatures are libsodium's.
//
// Thread-safety: a GrantSigner is immutable once made; every function may be called from any
// thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "common/status.h"
#include "common/sync_options.h"

namespace ember {

// What a signature covers: the clock, the trainers whose pushes count (in the grant's order),
// and how they are combined.
struct GrantTerms {
  uint64_t clock = 0;
  std::span<const uint32_t> trainers;
  Combine combine = Combine::kMean;
};

class GrantSigner {
 public:
  // Derives the signing key from a CurveZMQ secret key (Z85). InvalidArgument for an empty one.
  static Result<GrantSigner> FromSecretKey(const std::string& curve_secret_key);

  // The key servers verify with (32 bytes).
  const std::string& public_key() const { return public_key_; }
  // The signature of `terms` (64 bytes).
  std::string Sign(const GrantTerms& terms) const;

 private:
  std::string public_key_;
  std::string secret_key_;
};

// OK when `signature` is the signature of `terms` by the holder of `public_key`;
// PermissionDenied otherwise, naming the clock.
Status VerifyGrant(const std::string& public_key, const GrantTerms& terms,
                   const std::string& signature);

}  // namespace ember
