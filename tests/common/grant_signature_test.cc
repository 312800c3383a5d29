// Clock grants signed by the scheduler: a signature verifies only for the clock, trainers and
// combine rule it was made for, and only with the key of the scheduler that made it.
#include "common/grant_signature.h"

#include <gtest/gtest.h>

#include <vector>

#include "common/transport_security.h"

namespace ember {
namespace {

TEST(GrantSignatureTest, ASignatureVerifiesOnlyForWhatTheSchedulerGranted) {
  auto scheduler_keys = GenerateKeyPair();
  ASSERT_TRUE(scheduler_keys.ok());
  auto signer = GrantSigner::FromSecretKey(scheduler_keys->secret_key);
  ASSERT_TRUE(signer.ok()) << signer.status().ToString();
  const std::vector<uint32_t> trainers = {0, 1, 2};
  const GrantTerms terms{7, trainers, Combine::kMean};
  const std::string signature = signer->Sign(terms);
  EXPECT_TRUE(VerifyGrant(signer->public_key(), terms, signature).ok());

  // The same scheduler key signs alike (a restarted scheduler's grants still verify).
  auto again = GrantSigner::FromSecretKey(scheduler_keys->secret_key);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->public_key(), signer->public_key());

  const std::vector<uint32_t> other_trainers = {999};
  const std::vector<uint32_t> fewer = {0, 1};
  for (const GrantTerms& forged :
       {GrantTerms{8, trainers, Combine::kMean}, GrantTerms{~uint64_t{0}, trainers, Combine::kMean},
        GrantTerms{7, other_trainers, Combine::kMean}, GrantTerms{7, fewer, Combine::kMean},
        GrantTerms{7, trainers, Combine::kSum}}) {
    const Status refused = VerifyGrant(signer->public_key(), forged, signature);
    EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied) << refused.ToString();
    EXPECT_NE(refused.message().find("clock " + std::to_string(forged.clock)), std::string::npos)
        << refused.ToString();
  }
  // Another key, no signature, a damaged one.
  auto other_keys = GenerateKeyPair();
  ASSERT_TRUE(other_keys.ok());
  auto other = GrantSigner::FromSecretKey(other_keys->secret_key);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(VerifyGrant(other->public_key(), terms, signature).ok());
  EXPECT_FALSE(VerifyGrant(signer->public_key(), terms, other->Sign(terms)).ok());
  EXPECT_EQ(VerifyGrant(signer->public_key(), terms, "").code(), StatusCode::kPermissionDenied);
  std::string damaged = signature;
  damaged[5] ^= 1;
  EXPECT_FALSE(VerifyGrant(signer->public_key(), terms, damaged).ok());
  EXPECT_FALSE(GrantSigner::FromSecretKey("").ok());
}

}  // namespace
}  // namespace ember
