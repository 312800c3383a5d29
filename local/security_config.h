// The job config's `security:` section: which public keys the cluster trusts, with their roles,
// and where the scheduler's public key and this process's key pair come from. It becomes the
// TransportSecurity every socket of the process uses (common/transport_security.h).
//
//   security:
//     key_file: keys/server-0.key   # this process's key pair (usually given as --key instead)
//     scheduler_key: keys/scheduler.pub        # or the key itself (40 Z85 characters)
//     keyring: keys/                # every ROLE[-NAME].pub in it is trusted as ROLE
//     trusted:                      # and/or listed one by one
//       - {name: alice, role: admin, key: "<40 Z85 characters>"}   # or key: path/to/alice.pub
//
// Roles: server, trainer, admin. In a keyring, `scheduler.pub` is the scheduler's key.
// Relative paths resolve against the config file's folder.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "common/transport_security.h"

namespace YAML {
class Node;
}

namespace ember::local {

struct TrustedKeyConfig {
  std::string name, role, key;  // key: Z85 text or a path to a .pub file
};

struct SecurityConfig {
  std::string key_file;
  std::string scheduler_key;  // Z85 text or a path to a .pub file
  std::string keyring;        // a folder of ROLE[-NAME].pub files
  std::vector<TrustedKeyConfig> trusted;

  bool configured() const {
    return !key_file.empty() || !scheduler_key.empty() || !keyring.empty() || !trusted.empty();
  }
};

// Reads the `security` node; `base_dir` is where relative paths start.
Result<SecurityConfig> SecurityConfigFromYaml(const YAML::Node& node, const std::string& base_dir);

// The settings for this process: the config's section, with `key_file` (--key) taking the place
// of security.key_file when given, and `insecure` (--insecure). Errors name the file or entry.
Result<TransportSecurity> BuildTransportSecurity(const SecurityConfig& config,
                                                 const std::string& key_file, bool insecure);

}  // namespace ember::local
