// `ember keygen`: CurveZMQ key pairs as files (common/transport_security.h has the format).
#include <cstdio>

#include "app/commands.h"
#include "common/transport_security.h"

namespace ember::app {

int RunKeygen(const KeygenFlags& flags) {
  for (const std::string& name : flags.names) {
    auto pair = WriteKeyFiles(flags.out, name);
    if (!pair.ok()) return PrintError("keygen", pair.status());
    std::printf("%s  %s/%s.key\n", pair->public_key.c_str(), flags.out.c_str(), name.c_str());
  }
  return 0;
}

}  // namespace ember::app
