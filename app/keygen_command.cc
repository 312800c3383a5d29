// `ember keygen`: CurveZMQ key pairs as files (common/transport_security.h has the format).
#include <cstdio>

#include "app/commands.h"
#include "common/transport_security.h"

namespace ember::app {
namespace {

constexpr CommandText kKeygenCommand = {
    .name = "keygen",
    .summary = "make CurveZMQ key pairs for a cluster's processes and tools",
    .usage = "ember keygen [--out DIR] NAME...",
    .description =
        "Writes DIR/NAME.key (the key pair: keep it secret, mode 0600) and DIR/NAME.pub (the "
        "public key) for each NAME, never overwriting a file. A folder of ROLE[-NAME].pub files "
        "is a keyring the config can trust as a whole (security.keyring): name keys server-*, "
        "trainer-*, admin-* and scheduler. See docs/security.md.",
};

void AddKeygenFlags(CLI::App* command, KeygenFlags* flags) {
  AddValue(command, "--out", &flags->out, "DIR", "where the key files go (default: .)");
  command->add_option("names", flags->names, "one key pair per name, e.g. scheduler server-0")
      ->required()
      ->type_name("NAME");
}

}  // namespace

Command MakeKeygenCommand(CLI::App& ember) {
  return MakeCommand(ember, kKeygenCommand, AddKeygenFlags, RunKeygen);
}

int RunKeygen(const KeygenFlags& flags) {
  for (const std::string& name : flags.names) {
    auto pair = WriteKeyFiles(flags.out, name);
    if (!pair.ok()) return PrintError("keygen", pair.status());
    std::printf("%s  %s/%s.key\n", pair->public_key.c_str(), flags.out.c_str(), name.c_str());
  }
  return 0;
}

}  // namespace ember::app
