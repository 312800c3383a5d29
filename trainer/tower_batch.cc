// TowerBatch implementation.
#include "trainer/tower_batch.h"

namespace ember::trainer {

void TowerBatch::Prepare(const std::vector<std::vector<uint64_t>>& keys_per_slot, uint32_t dim,
                         const std::vector<std::vector<uint32_t>>& offsets_per_slot) {
  dim_ = dim;
  const size_t slots = keys_per_slot.size();
  unique_.resize(slots);
  rows_.resize(slots);
  grads_.resize(slots);
  offsets_.resize(slots);
  for (size_t s = 0; s < slots; ++s) {
    if (s < offsets_per_slot.size()) {
      offsets_[s] = offsets_per_slot[s];
    } else {
      offsets_[s].clear();
    }
    Dedupe(keys_per_slot[s], &unique_[s]);
    rows_[s].resize(unique_[s].keys.size() * dim);
    grads_[s].resize(unique_[s].keys.size() * dim);
  }
}

void TowerBatch::StartPull(ps::Client& client, const std::vector<std::string>& tables,
                           std::vector<ps::Ticket>* tickets) {
  for (size_t s = 0; s < unique_.size(); ++s) {
    tickets->push_back(client.Pull(tables[s], unique_[s].keys, rows_[s]));
  }
}

Status TowerBatch::ReadRows(const RowReader& reader, const std::vector<std::string>& tables) {
  for (size_t s = 0; s < unique_.size(); ++s) {
    RETURN_IF_ERROR(reader(tables[s], unique_[s].keys, rows_[s]));
  }
  return Status::Ok();
}

Status EncodeEntities(Backend& backend, Tower tower, const EntityKeys& entity_keys,
                      std::span<const uint32_t> entities, const ModelConfig& model,
                      const std::function<Status(TowerBatch&)>& fill_rows,
                      std::vector<float>* out) {
  const uint32_t samples = static_cast<uint32_t>(entities.size());
  std::vector<std::vector<uint64_t>> keys;
  std::vector<std::vector<uint32_t>> offsets;
  entity_keys.StartBatch(&keys, &offsets);
  for (const uint32_t entity : entities) entity_keys.AppendSample(entity, &keys, &offsets);
  TowerBatch batch;
  batch.Prepare(keys, model.embedding_dim, offsets);
  RETURN_IF_ERROR(fill_rows(batch));
  out->resize(size_t{samples} * model.output_dim);
  return backend.Encode(tower, samples, batch.Input(), *out);
}

void TowerBatch::StartPush(ps::Client& client, const std::vector<std::string>& tables,
                           uint64_t clock, bool deferred, uint64_t release_hint,
                           std::vector<ps::Ticket>* tickets) {
  for (size_t s = 0; s < unique_.size(); ++s) {
    tickets->push_back(
        client.Push(tables[s], unique_[s].keys, grads_[s], clock, deferred, release_hint));
  }
}

TowerInput TowerBatch::Input() {
  TowerInput input;
  for (size_t s = 0; s < unique_.size(); ++s) {
    input.slots.push_back(SlotInput{rows_[s], unique_[s].inverse, grads_[s], offsets_[s]});
  }
  return input;
}

size_t TowerBatch::unique_keys() const {
  size_t total = 0;
  for (const UniqueKeys& slot : unique_) total += slot.keys.size();
  return total;
}

Status WaitAll(std::vector<ps::Ticket>& tickets) {
  Status first;
  for (ps::Ticket& ticket : tickets) {
    Status status = ticket.Wait();
    if (first.ok() && !status.ok()) first = std::move(status);
  }
  tickets.clear();
  return first;
}

}  // namespace ember::trainer
