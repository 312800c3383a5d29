// Durability names.
#include "ps/server/durability.h"

namespace ember::ps {

Result<Durability> ParseDurability(const std::string& name) {
  if (name == "ack") return Durability::kAck;
  if (name == "sync") return Durability::kSync;
  if (name == "flush") return Durability::kFlush;
  return InvalidArgument("durability '" + name + "': expected ack, sync or flush");
}

}  // namespace ember::ps
