// LookaheadSource: batches drawn ahead, handed out in order, with the position before each.
#include "trainer/lookahead_source.h"

#include <algorithm>
#include <utility>

namespace ember::trainer {

LookaheadSource::LookaheadSource(DataSource* inner, uint32_t depth, OnDrawn on_drawn)
    : inner_(inner), depth_(depth == 0 ? 1 : depth), on_drawn_(std::move(on_drawn)) {}

Status LookaheadSource::DrawOne(uint32_t batch_size) {
  Drawn drawn{Batch{}, next_id_, inner_->SavePosition()};
  RETURN_IF_ERROR(inner_->Next(batch_size, &drawn.batch));
  ++next_id_;
  ahead_.push_back(std::move(drawn));
  if (on_drawn_) on_drawn_(ahead_.back().batch, ahead_.back().id);
  return Status::Ok();
}

Status LookaheadSource::Next(uint32_t batch_size, Batch* out) {
  if (ahead_.empty()) RETURN_IF_ERROR(DrawOne(batch_size));
  *out = std::move(ahead_.front().batch);
  last_id_ = ahead_.front().id;
  ahead_.pop_front();
  if (expected_ != UINT64_MAX && expected_ > 0) --expected_;
  while (ahead_.size() < std::min<uint64_t>(depth_, expected_)) {
    RETURN_IF_ERROR(DrawOne(batch_size));
  }
  return Status::Ok();
}

std::string LookaheadSource::Describe() const {
  return inner_->Describe() + ", drawn " + std::to_string(depth_) + " batches ahead";
}

Result<std::string> LookaheadSource::SavePosition() const {
  if (ahead_.empty()) return inner_->SavePosition();
  return ahead_.front().position_before;
}

Status LookaheadSource::RestorePosition(std::string_view position) {
  RETURN_IF_ERROR(inner_->RestorePosition(position));
  ahead_.clear();
  return Status::Ok();
}

}  // namespace ember::trainer
