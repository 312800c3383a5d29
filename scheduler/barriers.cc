// Barriers implementation.
#include "scheduler/barriers.h"

#include "common/quote_for_error.h"

namespace ember::scheduler {

bool Barriers::Waits(const std::string& name, const std::string& participant) const {
  auto it = open_.find(name);
  return it != open_.end() && it->second.arrived.count(participant) != 0;
}

size_t Barriers::waiting() const {
  size_t count = 0;
  for (const auto& [name, barrier] : open_) count += barrier.arrived.size();
  return count;
}

Result<std::vector<Barriers::Answer>> Barriers::Arrive(const std::string& name, uint32_t count,
                                                       std::string participant, Arrival arrival,
                                                       TimePoint now) {
  const std::string what = "barrier " + QuoteForError(name);
  if (count == 0 || count > max_count_) {
    return InvalidArgument(what + " with count " + std::to_string(count) + ": the count must be " +
                           "1 to " + std::to_string(max_count_) + " (limits.trainers)");
  }
  auto it = open_.find(name);
  if (it != open_.end() && it->second.count != count) {
    return InvalidArgument(what + " was opened for " + std::to_string(it->second.count) +
                           " participants; this arrival names count " + std::to_string(count));
  }
  Open& barrier = open_[name];
  barrier.count = count;
  barrier.arrived[std::move(participant)] = Waiting{std::move(arrival), now};
  std::vector<Answer> answers;
  if (barrier.arrived.size() < barrier.count) return answers;
  for (auto& [key, waiting] : barrier.arrived) {
    answers.push_back(Answer{std::move(waiting.arrival), Status::Ok()});
  }
  open_.erase(name);
  return answers;
}

std::vector<Barriers::Answer> Barriers::Expire(TimePoint now) {
  std::vector<Answer> expired;
  for (auto barrier = open_.begin(); barrier != open_.end();) {
    auto& arrived = barrier->second.arrived;
    for (auto it = arrived.begin(); it != arrived.end();) {
      if (now - it->second.since <= lease_) {
        ++it;
        continue;
      }
      expired.push_back(Answer{
          std::move(it->second.arrival),
          DeadlineExceeded("barrier " + QuoteForError(barrier->first) + ": " +
                           std::to_string(arrived.size()) + " of " +
                           std::to_string(barrier->second.count) + " participants arrived " +
                           "within " + std::to_string(lease_.count()) + " ms; this arrival " +
                           "expired (arrive again to wait on)")});
      it = arrived.erase(it);
    }
    barrier = arrived.empty() ? open_.erase(barrier) : std::next(barrier);
  }
  return expired;
}

}  // namespace ember::scheduler
