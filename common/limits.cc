// Limits: names, the refusal, the counters and the `limits:` loader.
#include "common/limits.h"

#include <yaml-cpp/yaml.h>

#include "common/yaml_util.h"

namespace ember {
namespace {

constexpr std::array<std::string_view, kLimitCount> kNames = {
    "keys_per_message", "tables_per_server", "deferred_pushes_per_clock",
    "push_ledger_senders", "trainers", "open_barriers", "barrier_name_bytes", "waiters",
    "socket_queue", "queued_hints", "followers"};

}  // namespace

std::string_view LimitName(Limit limit) { return kNames[static_cast<size_t>(limit)]; }

Status LimitExceeded(Limit limit, uint64_t value, const std::string& what) {
  return ResourceExhausted(what + ": over the limit of " + std::to_string(value) + " (limits." +
                           std::string(LimitName(limit)) +
                           "; raise it in the config's limits: section)");
}

std::vector<LimitHit> LimitCounters::Hits() const {
  std::vector<LimitHit> hits;
  for (size_t i = 0; i < kLimitCount; ++i) {
    const uint64_t times = counts_[i].load(std::memory_order_relaxed);
    if (times > 0) hits.push_back(LimitHit{std::string(kNames[i]), times});
  }
  return hits;
}

uint64_t HitsOf(const std::vector<LimitHit>& hits, Limit limit) {
  for (const LimitHit& hit : hits) {
    if (hit.limit == LimitName(limit)) return hit.count;
  }
  return 0;
}

Result<Limits> LimitsFromYaml(const YAML::Node& node, std::string_view path) {
  Limits limits;
  if (!node.IsDefined() || node.IsNull()) return limits;
  RETURN_IF_ERROR(config::RejectUnknownKeys(
      node, path,
      {"keys_per_message", "tables_per_server", "deferred_pushes_per_clock",
       "push_ledger_senders", "push_ledger_idle_seconds", "trainers", "open_barriers",
       "barrier_name_bytes", "waiters", "socket_queue", "queued_hints", "followers"}));
  struct Field {
    const char* key;
    uint32_t* value;
  };
  const Field fields[] = {{"keys_per_message", &limits.keys_per_message},
                          {"tables_per_server", &limits.tables_per_server},
                          {"deferred_pushes_per_clock", &limits.deferred_pushes_per_clock},
                          {"push_ledger_senders", &limits.push_ledger_senders},
                          {"push_ledger_idle_seconds", &limits.push_ledger_idle_seconds},
                          {"trainers", &limits.trainers},
                          {"open_barriers", &limits.open_barriers},
                          {"barrier_name_bytes", &limits.barrier_name_bytes},
                          {"waiters", &limits.waiters},
                          {"socket_queue", &limits.socket_queue},
                          {"queued_hints", &limits.queued_hints},
                          {"followers", &limits.followers}};
  for (const Field& field : fields) {
    RETURN_IF_ERROR(config::ReadOptional(node, path, field.key, field.value));
    if (*field.value == 0) {
      return InvalidArgument(std::string(path) + "." + field.key + ": must be at least 1");
    }
  }
  return limits;
}

}  // namespace ember
