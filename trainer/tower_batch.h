// TowerBatch: one tower's sparse side of a batch: unique keys per slot, their pulled rows, and
// the per-unique-row gradients the backend fills, with the pulls and pushes that move them.
//
// Keys are deduplicated per slot (each slot has its own table), so every unique row crosses the
// network once per step in each direction, and duplicate keys' gradients are summed before the
// push. The object owns the buffers the client's tickets borrow: keep it alive and untouched
// until those tickets complete.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ps/client/client.h"
#include "trainer/backend.h"
#include "trainer/entity_keys.h"
#include "trainer/key_dedup.h"
#include "trainer/model_config.h"

namespace ember::trainer {

class TowerBatch {
 public:
  // Deduplicates keys_per_slot[slot][...] and sizes the row and gradient buffers.
  // offsets_per_slot[slot] (when there is such an entry and it is not empty) marks a multi-valued
  // slot: Batch::user_offsets has the layout.
  void Prepare(const std::vector<std::vector<uint64_t>>& keys_per_slot, uint32_t dim,
               const std::vector<std::vector<uint32_t>>& offsets_per_slot = {});

  // Starts pulling every slot's unique rows from tables[slot]; appends the tickets.
  void StartPull(ps::Client& client, const std::vector<std::string>& tables,
                 std::vector<ps::Ticket>* tickets);
  // Reads every slot's unique rows from tables[slot] with `reader`, which changes nothing where
  // the rows are (serving: a lookup of a cluster or replica, or a copy in this process).
  using RowReader = std::function<Status(const std::string& table, std::span<const uint64_t> keys,
                                         std::span<float> out)>;
  Status ReadRows(const RowReader& reader, const std::vector<std::string>& tables);
  // Starts pushing every slot's unique-row gradients (held until the clock is applied when
  // `deferred`), releasing the look-ahead hint `release_hint` (0: none); appends the tickets.
  void StartPush(ps::Client& client, const std::vector<std::string>& tables, uint64_t clock,
                 bool deferred, uint64_t release_hint, std::vector<ps::Ticket>* tickets);

  // The backend's view of this tower (spans into this object).
  TowerInput Input();
  size_t unique_keys() const;

 private:
  uint32_t dim_ = 0;
  std::vector<UniqueKeys> unique_;
  std::vector<std::vector<float>> rows_;
  std::vector<std::vector<float>> grads_;
  std::vector<std::vector<uint32_t>> offsets_;  // [slot]: empty for a single-valued slot
};

// Waits for every ticket; the first error, if any (all are waited for regardless).
Status WaitAll(std::vector<ps::Ticket>& tickets);

// Encodes `entities` (users or items, as `tower` says; their keys in `entity_keys`) with one
// tower, the batch's rows filled by `fill_rows`; out is entities x output_dim.
Status EncodeEntities(Backend& backend, Tower tower, const EntityKeys& entity_keys,
                      std::span<const uint32_t> entities, const ModelConfig& model,
                      const std::function<Status(TowerBatch&)>& fill_rows,
                      std::vector<float>* out);

}  // namespace ember::trainer
