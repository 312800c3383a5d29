// Key pairs and key files for CurveZMQ (ZeroMQ's key generation and Z85 codec).
#include "common/transport_security.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "common/file_io.h"
#include "common/quote_for_error.h"

namespace ember {
namespace {

constexpr size_t kZ85KeyChars = 40;
constexpr size_t kMaxKeyFileBytes = 4096;

// The value of `name = value` lines in a key file's text.
std::string ValueOf(const std::string& text, std::string_view name) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    const size_t equals = line.find('=');
    if (equals == std::string_view::npos) continue;
    auto trim = [](std::string_view s) {
      while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
      while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
        s.remove_suffix(1);
      }
      return s;
    };
    if (trim(line.substr(0, equals)) == name) return std::string(trim(line.substr(equals + 1)));
  }
  return "";
}

Result<std::string> ReadSmallFile(const std::string& path) {
  auto text = ReadWholeFile(path, kMaxKeyFileBytes);
  if (!text.ok()) return text.status().WithContext("key file");
  return text;
}

// Creates `path` exclusively (never following a symlink) with `mode` and writes `text`.
Status WriteNewFile(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == EEXIST) {
      return FailedPrecondition("'" + path + "' exists; ember keygen never overwrites a key");
    }
    return Unavailable("cannot create '" + path + "': " + std::strerror(errno));
  }
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!written || !synced) return Unavailable("cannot write '" + path + "'");
  return Status::Ok();
}

}  // namespace

const TrustedKey* TransportSecurity::Find(std::string_view public_key) const {
  for (const TrustedKey& key : trusted) {
    if (key.public_key == public_key) return &key;
  }
  return nullptr;
}

Result<KeyPair> GenerateKeyPair() {
  std::array<char, kZ85KeyChars + 1> public_key{};
  std::array<char, kZ85KeyChars + 1> secret_key{};
  if (zmq_curve_keypair(public_key.data(), secret_key.data()) != 0) {
    return Unavailable(std::string("making a CurveZMQ key pair: ") + zmq_strerror(zmq_errno()) +
                       " (is libzmq built with libsodium?)");
  }
  return KeyPair{public_key.data(), secret_key.data()};
}

Status CheckKey(std::string_view key, std::string_view what) {
  if (key.size() != kZ85KeyChars) {
    return InvalidArgument(std::string(what) + ": a CurveZMQ key is " +
                           std::to_string(kZ85KeyChars) + " Z85 characters, got " +
                           std::to_string(key.size()));
  }
  std::array<uint8_t, 32> bytes{};
  const std::string text(key);
  if (zmq_z85_decode(bytes.data(), text.c_str()) == nullptr) {
    return InvalidArgument(std::string(what) + ": " + QuoteForError(text) +
                           " is not a Z85-encoded key");
  }
  return Status::Ok();
}

Result<PeerRole> ParseTrustedRole(std::string_view name) {
  if (name == "server") return PeerRole::kServer;
  if (name == "trainer") return PeerRole::kTrainer;
  if (name == "admin") return PeerRole::kAdmin;
  if (name == "reader") return PeerRole::kReader;
  return InvalidArgument("role " + QuoteForError(name) +
                         ": expected server, trainer, admin or reader");
}

Result<KeyPair> WriteKeyFiles(const std::string& dir, const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name.front() == '.') {
    return InvalidArgument("key name " + QuoteForError(name) +
                           ": expected a plain file name, not starting with '.'");
  }
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return Unavailable("cannot create '" + dir + "': " + error.message());
  ASSIGN_OR_RETURN(KeyPair pair, GenerateKeyPair());
  const std::string base = (std::filesystem::path(dir) / name).string();
  RETURN_IF_ERROR(WriteNewFile(base + ".key",
                               "# ember key pair: keep this file secret\npublic-key = " +
                                   pair.public_key + "\nsecret-key = " + pair.secret_key + "\n",
                               0600));
  RETURN_IF_ERROR(WriteNewFile(base + ".pub", "public-key = " + pair.public_key + "\n", 0644));
  return pair;
}

Result<KeyPair> ReadKeyPairFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path));
  KeyPair pair{ValueOf(text, "public-key"), ValueOf(text, "secret-key")};
  if (pair.secret_key.empty()) {
    return InvalidArgument("key file '" + path +
                           "' has no 'secret-key = ...' line (a .pub file is not a key pair)");
  }
  RETURN_IF_ERROR(CheckKey(pair.public_key, "public-key in '" + path + "'"));
  RETURN_IF_ERROR(CheckKey(pair.secret_key, "secret-key in '" + path + "'"));
  std::array<char, kZ85KeyChars + 1> derived{};
  if (zmq_curve_public(derived.data(), pair.secret_key.c_str()) != 0 ||
      pair.public_key != derived.data()) {
    return InvalidArgument("key file '" + path + "': the public key does not match the secret key");
  }
  return pair;
}

Result<std::string> ReadPublicKeyFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path));
  std::string key = ValueOf(text, "public-key");
  RETURN_IF_ERROR(CheckKey(key, "public-key in '" + path + "'"));
  return key;
}

Status ValidateSecurity(const TransportSecurity& security) {
  if (!security.enabled()) {
    if (!security.trusted.empty() || !security.scheduler_key.empty()) {
      return InvalidArgument(
          "the config names trusted keys, but this process has no key pair: pass --key FILE "
          "(make one with `ember keygen`)");
    }
    return Status::Ok();
  }
  RETURN_IF_ERROR(CheckKey(security.own.public_key, "this process's public key"));
  RETURN_IF_ERROR(CheckKey(security.own.secret_key, "this process's secret key"));
  if (!security.scheduler_key.empty()) {
    RETURN_IF_ERROR(CheckKey(security.scheduler_key, "security.scheduler_key"));
  }
  std::set<std::string> seen;
  for (const TrustedKey& key : security.trusted) {
    RETURN_IF_ERROR(CheckKey(key.public_key, "trusted key " + QuoteForError(key.name)));
    if (!seen.insert(key.public_key).second) {
      return InvalidArgument("trusted key " + QuoteForError(key.name) +
                             " is listed twice; give each key one role");
    }
  }
  return Status::Ok();
}

}  // namespace ember
