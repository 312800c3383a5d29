// Durability: when a server's acknowledged push is on disk (the config's
// cluster.server_durability, `ember server --durability`).
#pragma once

#include <string>

#include "common/status.h"

namespace ember::ps {

// When an acknowledged push is on disk (only with a data directory).
enum class Durability {
  kAck,    // in the write-ahead log before the ack: survives the server being killed (default)
  kSync,   // also fsynced before the ack: survives a machine crash; one fsync per push
  kFlush,  // rows reach disk when evicted and at a clean shutdown: a crash loses the rest
};
// "ack", "sync" or "flush"; InvalidArgument naming the value otherwise.
Result<Durability> ParseDurability(const std::string& name);

}  // namespace ember::ps
