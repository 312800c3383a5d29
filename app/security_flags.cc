// --key, --scheduler-key and --insecure.
#include "app/security_flags.h"

namespace ember::app {

void AddSecurityFlags(CLI::App* command, SecurityFlags* flags, bool can_bind) {
  const std::string group = "authentication (docs/security.md)";
  command
      ->add_option("--key", flags->key_file,
                   "this process's key pair (NAME.key from `ember keygen`; default: "
                   "security.key_file)")
      ->type_name("FILE")
      ->group(group);
  command
      ->add_option("--scheduler-key", flags->scheduler_key,
                   "the scheduler's public key, or its .pub file (default: "
                   "security.scheduler_key)")
      ->type_name("KEY")
      ->group(group);
  if (can_bind) {
    command
        ->add_flag("--insecure", flags->insecure,
                   "allow binding a non-loopback address without keys: anyone who can reach it "
                   "may read and change every row")
        ->group(group);
  }
}

Result<TransportSecurity> ResolveSecurity(const SecurityFlags& flags,
                                          local::SecurityConfig config) {
  if (!flags.scheduler_key.empty()) config.scheduler_key = flags.scheduler_key;
  return local::BuildTransportSecurity(config, flags.key_file, flags.insecure);
}

}  // namespace ember::app
