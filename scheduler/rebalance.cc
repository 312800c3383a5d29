// PlanRebalance implementation.
#include "scheduler/rebalance.h"

#include <algorithm>
#include <map>

namespace ember::scheduler {

std::vector<PartitionMove> PlanRebalance(const std::vector<uint32_t>& owners,
                                         const std::vector<uint32_t>& targets) {
  if (targets.empty()) return {};
  // Partitions held now, per server (ascending).
  std::map<uint32_t, std::vector<uint32_t>> held;
  for (uint32_t p = 0; p < owners.size(); ++p) held[owners[p]].push_back(p);

  // Shares: P / n each, the remainder to the targets holding the most now (ties: lower id).
  const size_t n = targets.size();
  const uint32_t base = static_cast<uint32_t>(owners.size() / n);
  size_t extra = owners.size() % n;
  std::vector<uint32_t> by_holding = targets;
  std::stable_sort(by_holding.begin(), by_holding.end(), [&](uint32_t a, uint32_t b) {
    return held[a].size() > held[b].size();
  });
  std::map<uint32_t, uint32_t> share;
  for (uint32_t server : by_holding) share[server] = base + (extra > 0 ? (--extra, 1) : 0);

  // Partitions that must move: everything of non-targets, the highest-numbered excess of targets.
  std::vector<std::pair<uint32_t, uint32_t>> leaving;  // (partition, from)
  for (auto& [server, partitions] : held) {
    const auto it = share.find(server);
    const size_t keep = it == share.end() ? 0 : std::min<size_t>(it->second, partitions.size());
    for (size_t i = keep; i < partitions.size(); ++i) leaving.emplace_back(partitions[i], server);
  }
  std::sort(leaving.begin(), leaving.end());

  // Fill the targets below their share, in id order, with the leaving partitions in order.
  std::vector<PartitionMove> moves;
  size_t next = 0;
  std::vector<uint32_t> receivers = targets;
  std::sort(receivers.begin(), receivers.end());
  for (uint32_t server : receivers) {
    const size_t has = std::min<size_t>(held[server].size(), share[server]);
    for (size_t i = has; i < share[server] && next < leaving.size(); ++i, ++next) {
      moves.push_back({leaving[next].first, leaving[next].second, server});
    }
  }
  return moves;
}

}  // namespace ember::scheduler
