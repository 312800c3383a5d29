// TransportSecurity: the CurveZMQ identity of a process and the public keys it trusts, with the
// role each key plays; and the key files `ember keygen` writes. A Context made with it
// (common/transport.h) encrypts and authenticates every TCP socket; no code outside the transport
// needs to know about keys beyond passing these settings along.
//
// Key files are text:
//   NAME.key (mode 0600, created exclusively):   public-key = <Z85>\nsecret-key = <Z85>\n
//   NAME.pub:                                    public-key = <Z85>\n
// Z85 keys are 40 characters (32 bytes).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/peer.h"
#include "common/status.h"

namespace ember {

struct KeyPair {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters
};

// A public key the cluster trusts, and what it may do.
struct TrustedKey {
  std::string name;  // for logs and errors
  std::string public_key;
  PeerRole role = PeerRole::kTrainer;
};

struct TransportSecurity {
  KeyPair own;                      // this process's key pair; empty: authentication off
  std::string scheduler_key;        // the scheduler's public key, to connect to it
  std::vector<TrustedKey> trusted;  // who may connect to this process's bound sockets
  bool insecure = false;            // allow non-loopback binds without keys (--insecure)

  bool enabled() const { return !own.public_key.empty(); }
  // The trusted key equal to `public_key`, or null.
  const TrustedKey* Find(std::string_view public_key) const;
};

// A fresh random key pair (libsodium through ZeroMQ).
Result<KeyPair> GenerateKeyPair();
// InvalidArgument naming `what` unless `key` is a well-formed Z85 key of 32 bytes.
Status CheckKey(std::string_view key, std::string_view what);
// "server", "trainer", "admin" or "reader" (the roles a config may give a key).
Result<PeerRole> ParseTrustedRole(std::string_view name);

// Writes DIR/NAME.key (0600, never overwriting an existing file) and DIR/NAME.pub; returns the
// pair written.
Result<KeyPair> WriteKeyFiles(const std::string& dir, const std::string& name);
// Reads a NAME.key file; errors name the file and what is wrong with it.
Result<KeyPair> ReadKeyPairFile(const std::string& path);
// Reads the public key of a NAME.pub (or NAME.key) file.
Result<std::string> ReadPublicKeyFile(const std::string& path);

// Checks the settings: well-formed keys, no key trusted twice, the own key set when any key is
// trusted. Errors name the offending entry.
Status ValidateSecurity(const TransportSecurity& security);

}  // namespace ember
