// LookaheadSource: a DataSource that draws its batches `depth` ahead of the trainer
// (train.lookahead), so that the trainer can announce each batch's keys to the servers several
// steps before it pulls them (ps::Client::Hint).
//
// It hands out exactly the batches its inner source would, in the same order, and its position is
// the inner source's as if nothing had been drawn ahead (the position noted before the oldest
// batch waiting): a checkpoint taken with look-ahead resumes where one without it would, and
// RestorePosition drops what was drawn ahead.
//
// Not thread-safe (one trainer thread).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>

#include "trainer/data_source.h"

namespace ember::trainer {

class LookaheadSource final : public DataSource {
 public:
  // `on_drawn(batch, id)` sees every batch as it is drawn, with its id: 1, 2, ... in drawing order
  // over the object's life (a restore does not reuse ids).
  using OnDrawn = std::function<void(const Batch& batch, uint64_t id)>;
  // `inner` is borrowed; depth >= 1.
  LookaheadSource(DataSource* inner, uint32_t depth, OnDrawn on_drawn);

  // Hands out the oldest batch drawn ahead (drawing it first if none waits), then draws until
  // `depth` batches wait. Every call of a run asks for the same batch size.
  Status Next(uint32_t batch_size, Batch* out) override;
  // Only `batches` more will be asked for (a run's remaining steps): nothing beyond them is drawn
  // ahead, so that no hint outlives the run.
  void ExpectOnly(uint64_t batches) { expected_ = batches; }
  // The id of the batch the last Next handed out (0 before the first).
  uint64_t last_id() const { return last_id_; }
  // Batches drawn ahead, waiting.
  size_t waiting() const { return ahead_.size(); }

  uint32_t user_slots() const override { return inner_->user_slots(); }
  uint32_t item_slots() const override { return inner_->item_slots(); }
  std::string Describe() const override;
  Result<std::string> SavePosition() const override;
  Status RestorePosition(std::string_view position) override;

 private:
  struct Drawn {
    Batch batch;
    uint64_t id = 0;
    Result<std::string> position_before;  // the inner source's position before drawing it
  };
  Status DrawOne(uint32_t batch_size);

  DataSource* const inner_;
  const uint32_t depth_;
  const OnDrawn on_drawn_;
  std::deque<Drawn> ahead_;
  uint64_t next_id_ = 1;
  uint64_t expected_ = UINT64_MAX;  // batches still to be asked for
  uint64_t last_id_ = 0;
};

}  // namespace ember::trainer
