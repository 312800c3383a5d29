// GrantSignature implementation: Ed25519 (libsodium's crypto_sign) over the grant's terms.
#include "common/grant_signature.h"

#include <sodium.h>

#include <string_view>

namespace ember {
namespace {

constexpr std::string_view kDomain = "ember clock grant v1";

// The bytes signed: the domain, then the clock, the combine mode, the trainer count and the
// trainers, integers little-endian.
std::string SignedBytes(const GrantTerms& terms) {
  std::string bytes(kDomain);
  auto put = [&bytes](uint64_t value, int width) {
    for (int i = 0; i < width; ++i) bytes.push_back(static_cast<char>(value >> (8 * i)));
  };
  put(terms.clock, 8);
  put(static_cast<uint8_t>(terms.combine), 1);
  put(terms.trainers.size(), 4);
  for (uint32_t trainer : terms.trainers) put(trainer, 4);
  return bytes;
}

const unsigned char* Bytes(const std::string& text) {
  return reinterpret_cast<const unsigned char*>(text.data());
}

}  // namespace

Result<GrantSigner> GrantSigner::FromSecretKey(const std::string& curve_secret_key) {
  if (curve_secret_key.empty()) return InvalidArgument("signing grants needs a secret key");
  if (sodium_init() < 0) return Internal("libsodium could not be initialised");
  unsigned char seed[crypto_sign_SEEDBYTES];
  const std::string input = std::string(kDomain) + curve_secret_key;
  crypto_generichash(seed, sizeof(seed), Bytes(input), input.size(), nullptr, 0);
  GrantSigner signer;
  signer.public_key_.resize(crypto_sign_PUBLICKEYBYTES);
  signer.secret_key_.resize(crypto_sign_SECRETKEYBYTES);
  crypto_sign_seed_keypair(reinterpret_cast<unsigned char*>(signer.public_key_.data()),
                           reinterpret_cast<unsigned char*>(signer.secret_key_.data()), seed);
  sodium_memzero(seed, sizeof(seed));
  return signer;
}

std::string GrantSigner::Sign(const GrantTerms& terms) const {
  const std::string message = SignedBytes(terms);
  std::string signature(crypto_sign_BYTES, '\0');
  crypto_sign_detached(reinterpret_cast<unsigned char*>(signature.data()), nullptr,
                       Bytes(message), message.size(), Bytes(secret_key_));
  return signature;
}

Status VerifyGrant(const std::string& public_key, const GrantTerms& terms,
                   const std::string& signature) {
  if (public_key.size() != crypto_sign_PUBLICKEYBYTES || signature.size() != crypto_sign_BYTES) {
    return PermissionDenied("the grant of clock " + std::to_string(terms.clock) +
                            " carries no valid scheduler signature (" +
                            std::to_string(signature.size()) + " bytes; " +
                            std::to_string(crypto_sign_BYTES) + " expected)");
  }
  if (sodium_init() < 0) return Internal("libsodium could not be initialised");
  const std::string message = SignedBytes(terms);
  if (crypto_sign_verify_detached(Bytes(signature), Bytes(message), message.size(),
                                  Bytes(public_key)) != 0) {
    return PermissionDenied("the grant of clock " + std::to_string(terms.clock) + " for " +
                            std::to_string(terms.trainers.size()) +
                            " trainers is not one the scheduler signed");
  }
  return Status::Ok();
}

}  // namespace ember
