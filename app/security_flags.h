// Flags for the keys of a process (--key, --scheduler-key, --insecure), which every command that
// opens a socket takes, and how they combine with the config's `security:` section
// (local/security_config.h) into the TransportSecurity its sockets use.
#pragma once

#include <string>

#include "app/command_line.h"
#include "common/transport_security.h"
#include "local/security_config.h"

namespace ember::app {

struct SecurityFlags {
  std::string key_file;       // --key: this process's key pair
  std::string scheduler_key;  // --scheduler-key: Z85 text or a .pub file
  bool insecure = false;      // --insecure: bind non-loopback addresses without keys
};

// --key and --scheduler-key; with `can_bind`, also --insecure.
void AddSecurityFlags(CLI::App* command, SecurityFlags* flags, bool can_bind);

// The process's settings: the config's section (none for the tools), with the flags on top.
Result<TransportSecurity> ResolveSecurity(const SecurityFlags& flags,
                                          local::SecurityConfig config = {});

}  // namespace ember::app
