// SyntheticSource: clustered Zipf key generation.
#include "trainer/synthetic_source.h"

#include <cmath>
#include <sstream>

#include "common/check.h"
#include "common/hash.h"

namespace ember::trainer {
namespace {

// Stable per-slot identity: the key salt must not depend on the seed, so sources with different
// seeds (e.g. one per trainer) share one key space.
uint64_t SlotSalt(std::string_view tower, uint32_t slot) {
  return HashCombine(HashName(tower), slot);
}

}  // namespace

Status ValidateSyntheticOptions(const SyntheticOptions& options, std::string_view path) {
  const std::string p(path);
  if (options.user_slots == 0) return InvalidArgument(p + ".user_slots: must be at least 1");
  if (options.item_slots == 0) return InvalidArgument(p + ".item_slots: must be at least 1");
  if (options.vocabulary == 0) return InvalidArgument(p + ".vocabulary: must be at least 1");
  if (!(options.exponent >= 0) || !std::isfinite(options.exponent)) {
    return InvalidArgument(p + ".exponent: must be a finite number >= 0");
  }
  if (options.num_clusters == 0) return InvalidArgument(p + ".num_clusters: must be at least 1");
  if (options.num_clusters > options.vocabulary) {
    return InvalidArgument(p + ".num_clusters: " + std::to_string(options.num_clusters) +
                           " exceeds the vocabulary (" + std::to_string(options.vocabulary) + ")");
  }
  if (!(options.signal >= 0.0f && options.signal <= 1.0f)) {
    return InvalidArgument(p + ".signal: must be in [0, 1]");
  }
  return Status::Ok();
}

SyntheticSource::SyntheticSource(const SyntheticOptions& options)
    : options_(options), sample_rng_(HashCombine(options.seed, HashName("clusters"))) {
  const Status valid = ValidateSyntheticOptions(options, "synthetic");
  EMBER_CHECK(valid.ok(), valid.ToString());
  const uint64_t per_cluster = options.vocabulary / options.num_clusters;
  auto make_slots = [&](std::string_view tower, uint32_t count) {
    std::vector<Slot> slots;
    for (uint32_t s = 0; s < count; ++s) {
      const uint64_t salt = SlotSalt(tower, s);
      slots.push_back(Slot{std::mt19937_64(HashCombine(options.seed, salt)),
                           ZipfSampler(options.vocabulary, options.exponent, false),
                           ZipfSampler(per_cluster, options.exponent, false), salt});
    }
    return slots;
  };
  user_ = make_slots("user", options.user_slots);
  item_ = make_slots("item", options.item_slots);
}

uint64_t SyntheticSource::DrawKey(Slot& slot, bool follows_cluster, uint32_t cluster) {
  const uint64_t rank =
      follows_cluster
          ? slot.cluster.Rank(UniformDouble(slot.rng)) * options_.num_clusters + cluster
          : slot.whole.Rank(UniformDouble(slot.rng));
  return Mix64(rank ^ slot.salt);  // a bijection of the rank: distinct ranks, distinct keys
}

void SyntheticSource::FillTower(std::vector<Slot>& slots, const std::vector<uint32_t>& clusters,
                                const std::vector<uint8_t>& follows, uint32_t batch_size,
                                std::vector<std::vector<uint64_t>>* keys) {
  keys->resize(slots.size());
  for (size_t s = 0; s < slots.size(); ++s) {
    std::vector<uint64_t>& column = (*keys)[s];
    column.resize(batch_size);
    for (uint32_t b = 0; b < batch_size; ++b) {
      column[b] = DrawKey(slots[s], follows[b] != 0, clusters[b]);
    }
  }
}

Status SyntheticSource::Next(uint32_t batch_size, Batch* out) {
  clusters_.resize(batch_size);
  follows_.resize(batch_size);
  for (uint32_t b = 0; b < batch_size; ++b) {
    clusters_[b] = static_cast<uint32_t>(UniformBelow(sample_rng_, options_.num_clusters));
    follows_[b] = UniformDouble(sample_rng_) < options_.signal ? 1 : 0;
  }
  out->size = batch_size;
  FillTower(user_, clusters_, follows_, batch_size, &out->user_keys);
  FillTower(item_, clusters_, follows_, batch_size, &out->item_keys);
  return Status::Ok();
}

std::string SyntheticSource::Describe() const {
  std::ostringstream out;
  out << "synthetic zipf(" << options_.exponent << ") vocab " << options_.vocabulary << " x "
      << (options_.user_slots + options_.item_slots) << " slots, " << options_.num_clusters
      << " clusters, signal " << options_.signal;
  return out.str();
}

// The streams in a fixed order: samples, then every user slot, then every item slot, each as the
// standard library writes an mt19937_64 (its 312 words and an index).
Result<std::string> SyntheticSource::SavePosition() const {
  std::ostringstream out;
  out << "synthetic " << (1 + user_.size() + item_.size()) << ' ' << sample_rng_;
  for (const auto* slots : {&user_, &item_}) {
    for (const Slot& slot : *slots) out << ' ' << slot.rng;
  }
  return out.str();
}

Status SyntheticSource::RestorePosition(std::string_view position) {
  std::istringstream in{std::string(position)};
  std::string kind;
  size_t streams = 0;
  in >> kind >> streams;
  const size_t expected = 1 + user_.size() + item_.size();
  if (!in || kind != "synthetic") {
    return InvalidArgument("not a synthetic data position: '" +
                           std::string(position.substr(0, 40)) + "'");
  }
  if (streams != expected) {
    return InvalidArgument("the saved synthetic position has " + std::to_string(streams) +
                           " random streams but this source has " + std::to_string(expected) +
                           " (slot counts differ)");
  }
  std::mt19937_64 sample_rng;
  std::vector<std::mt19937_64> slot_rngs(expected - 1);
  in >> sample_rng;
  for (std::mt19937_64& rng : slot_rngs) in >> rng;
  if (in.fail()) return InvalidArgument("the saved synthetic position is damaged or truncated");
  in >> std::ws;
  if (!in.eof()) return InvalidArgument("the saved synthetic position has trailing text");
  sample_rng_ = sample_rng;
  size_t next = 0;
  for (auto* slots : {&user_, &item_}) {
    for (Slot& slot : *slots) slot.rng = slot_rngs[next++];
  }
  return Status::Ok();
}

}  // namespace ember::trainer
