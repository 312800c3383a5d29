// Trainer::Run: the training loop. Each step pulls its rows, trains the dense towers, pushes the
// row gradients and reports its clock; StepLoop holds the step buffers a run cycles through and
// the step's phases, Run the log windows and the summary.
#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "trainer/batch.h"
#include "trainer/tower_batch.h"
#include "trainer/trainer.h"

namespace ember::trainer {
namespace {

using Clock = std::chrono::steady_clock;

double MillisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// What one step measured.
struct StepFigures {
  StepStats stats;
  double pull_ms = 0, compute_ms = 0, push_ms = 0, wait_ms = 0;
  uint64_t unique_keys = 0;
  bool stop = false;  // the step hook ended the run
};

// Accumulates per-step figures into a window.
struct WindowAccumulator {
  uint32_t first_step = 0;
  uint32_t steps = 0;
  double loss = 0, pull = 0, compute = 0, push = 0, wait = 0, unique = 0, device = 0;
  uint64_t samples = 0;
  Clock::time_point start = Clock::now();

  void Add(const StepFigures& step, uint32_t batch_size) {
    steps += 1;
    loss += step.stats.loss;
    pull += step.pull_ms;
    compute += step.compute_ms;
    push += step.push_ms;
    wait += step.wait_ms;
    device += step.stats.device_ms;
    unique += static_cast<double>(step.unique_keys);
    samples += batch_size;
  }

  WindowStats Finish(uint32_t last_step) const {
    WindowStats w;
    w.first_step = first_step;
    w.last_step = last_step;
    const double n = std::max<uint32_t>(steps, 1);
    w.loss = loss / n;
    w.pull_ms = pull / n;
    w.compute_ms = compute / n;
    w.push_ms = push / n;
    w.wait_ms = wait / n;
    w.unique_keys = unique / n;
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    w.device_busy = seconds > 0 ? device / (seconds * 1000.0) : 0;
    w.samples_per_second = seconds > 0 ? samples / seconds : 0;
    return w;
  }
};

}  // namespace

// The steps of one Run. Three sets of buffers, used in turn: step t computes from one while the
// rows of step t+1 arrive into the next (pipeline mode) and the gradients of step t-1 leave from
// the previous.
class Trainer::StepLoop {
 public:
  StepLoop(Trainer& trainer, uint32_t steps, const StepHook& after_step)
      : t_(trainer), steps_(steps), after_step_(after_step) {
    if (t_.dense_) {
      for (StepBuffers& b : buffers_) {
        b.dense_rows.resize(t_.dense_->buffer_floats());
        b.dense_grads.resize(t_.dense_->buffer_floats());
      }
    }
  }
  // No ticket outlives its rows, also on an early return.
  ~StepLoop() { (void)DrainAll(); }

  // Draws the first step's batch and starts pulling its rows.
  Status Start(uint32_t first_step) {
    first_step_ = first_step;
    if (first_step > steps_) return Status::Ok();
    RETURN_IF_ERROR(Prepare(buffers_[0]));
    StartPull(buffers_[0]);
    return Status::Ok();
  }
  Result<StepFigures> RunStep(uint32_t step);
  // Waits for every push and pull still in flight; the first push's error.
  Status DrainAll();

 private:
  struct StepBuffers {
    Batch batch;
    TowerBatch user, item;
    std::vector<ps::Ticket> pulls, pushes;
    std::vector<float> dense_rows, dense_grads;  // when dense_
    uint64_t hint = 0;  // with look-ahead: the hint that announced the batch, which its push ends
  };
  bool deferred() const { return t_.options_.sync.mode == SyncMode::kBsp; }
  bool pipeline() const { return t_.options_.pipeline; }
  Status Prepare(StepBuffers& b);
  void StartPull(StepBuffers& b);
  // The data position after step `step_clock`, noted before the next batch is drawn, for a cut
  // or a checkpoint the step hook may write.
  void NotePosition(uint64_t step_clock);
  // The step's phases, in order.
  Status AwaitRows(uint32_t step, const std::string& where, StepBuffers& current, StepBuffers& next,
                   StepFigures& figures);
  Status Compute(StepBuffers& current, const std::string& where, StepFigures& figures);
  Status StartPushes(StepBuffers& current, const std::string& where);
  Status AwaitPushesAndClock(uint32_t step, const std::string& where, StepBuffers& current,
                             StepBuffers& next, StepBuffers& previous, StepFigures& figures);
  Status AfterStep(uint32_t step, const std::string& where, StepBuffers& current,
                   StepFigures& figures);

  Trainer& t_;
  const uint32_t steps_;
  const StepHook& after_step_;
  uint32_t first_step_ = 1;
  StepBuffers buffers_[3];
};

Status Trainer::StepLoop::Prepare(StepBuffers& b) {
  const uint32_t dim = t_.model_.embedding_dim;
  RETURN_IF_ERROR(t_.data_->Next(t_.options_.batch_size, &b.batch));
  b.hint = t_.lookahead_ ? t_.lookahead_->last_id() : 0;
  b.user.Prepare(b.batch.user_keys, dim, b.batch.user_offsets);
  b.item.Prepare(b.batch.item_keys, dim, b.batch.item_offsets);
  return Status::Ok();
}

void Trainer::StepLoop::StartPull(StepBuffers& b) {
  if (t_.observer_.before_pull) t_.observer_.before_pull(t_.clock_);
  if (t_.dense_) t_.dense_->StartPull(*t_.client_, b.dense_rows, &b.pulls);
  b.user.StartPull(*t_.client_, t_.options_.user_tables, &b.pulls);
  b.item.StartPull(*t_.client_, t_.options_.item_tables, &b.pulls);
}

Status Trainer::StepLoop::DrainAll() {
  Status first;
  for (StepBuffers& b : buffers_) {
    Status status = WaitAll(b.pushes);
    if (first.ok() && !status.ok()) first = status;
  }
  for (StepBuffers& b : buffers_) (void)WaitAll(b.pulls);
  return first;
}

void Trainer::StepLoop::NotePosition(uint64_t step_clock) {
  if (!t_.sync_.CutAfter(step_clock) && !after_step_) return;
  t_.noted_position_ = t_.data_->SavePosition();
  t_.noted_position_clock_ = step_clock;
}

Result<StepFigures> Trainer::StepLoop::RunStep(uint32_t step) {
  const uint32_t n = step - first_step_;
  StepBuffers& current = buffers_[n % 3];
  StepBuffers& next = buffers_[(n + 1) % 3];      // step t-2's buffer: its pushes are done
  StepBuffers& previous = buffers_[(n + 2) % 3];  // step t-1's buffer
  const std::string where = "step " + std::to_string(step);
  StepFigures figures;
  RETURN_IF_ERROR(AwaitRows(step, where, current, next, figures));
  RETURN_IF_ERROR(Compute(current, where, figures));
  ++t_.clock_;
  RETURN_IF_ERROR(StartPushes(current, where));
  RETURN_IF_ERROR(AwaitPushesAndClock(step, where, current, next, previous, figures));
  RETURN_IF_ERROR(AfterStep(step, where, current, figures));
  if (!figures.stop && !pipeline() && step < steps_) StartPull(next);  // sees every update
  figures.unique_keys = current.user.unique_keys() + current.item.unique_keys();
  return figures;
}

Status Trainer::StepLoop::AwaitRows(uint32_t step, const std::string& where, StepBuffers& current,
                                    StepBuffers& next, StepFigures& figures) {
  auto phase = Clock::now();
  RETURN_IF_ERROR(WaitAll(current.pulls).WithContext(where + " pull"));
  figures.pull_ms = MillisSince(phase);
  if (pipeline() && step < steps_) {
    phase = Clock::now();
    NotePosition(t_.clock_ + 1);
    RETURN_IF_ERROR(Prepare(next));
    StartPull(next);  // reads rows before this step's (and maybe the last step's) updates
    figures.pull_ms += MillisSince(phase);
  }
  return Status::Ok();
}

Status Trainer::StepLoop::Compute(StepBuffers& current, const std::string& where,
                                  StepFigures& figures) {
  const auto phase = Clock::now();
  if (t_.dense_) {
    RETURN_IF_ERROR(t_.dense_->Load(current.dense_rows, *t_.backend_).WithContext(where));
  }
  TowerInput item_input = current.item.Input();
  if (t_.options_.sampling_correction && t_.model_.loss == LossKind::kInBatchSoftmax) {
    item_input.logit_offset = current.batch.item_log_frequency;
  }
  ASSIGN_OR_RETURN(figures.stats, t_.backend_->TrainStep(t_.options_.batch_size,
                                                         current.user.Input(), item_input));
  figures.compute_ms = MillisSince(phase);
  return Status::Ok();
}

Status Trainer::StepLoop::StartPushes(StepBuffers& current, const std::string& where) {
  const uint64_t clock = t_.clock_;
  current.user.StartPush(*t_.client_, t_.options_.user_tables, clock, deferred(), current.hint,
                         &current.pushes);
  current.item.StartPush(*t_.client_, t_.options_.item_tables, clock, deferred(), current.hint,
                         &current.pushes);
  if (!t_.dense_) return Status::Ok();
  return t_.dense_
      ->StartPush(*t_.client_, *t_.backend_, current.dense_grads, clock, deferred(),
                  &current.pushes)
      .WithContext(where);
}

Status Trainer::StepLoop::AwaitPushesAndClock(uint32_t step, const std::string& where,
                                              StepBuffers& current, StepBuffers& next,
                                              StepBuffers& previous, StepFigures& figures) {
  auto phase = Clock::now();
  if (pipeline()) {
    RETURN_IF_ERROR(
        WaitAll(previous.pushes).WithContext("step " + std::to_string(step - 1) + " push"));
    figures.push_ms = MillisSince(phase);
    phase = Clock::now();
    RETURN_IF_ERROR(t_.sync_.EndStep(t_.clock_).WithContext(where));  // asp: answered at once
    if (t_.sync_.CutAfter(t_.clock_)) {
      RETURN_IF_ERROR(WaitAll(current.pushes).WithContext(where + " push"));
    }
  } else {
    if (step < steps_) {  // while the pushes fly
      NotePosition(t_.clock_);
      RETURN_IF_ERROR(Prepare(next));
    }
    phase = Clock::now();
    RETURN_IF_ERROR(WaitAll(current.pushes).WithContext(where + " push"));
    figures.push_ms = MillisSince(phase);
    if (t_.observer_.step_done) t_.observer_.step_done(t_.clock_);
    phase = Clock::now();
    RETURN_IF_ERROR(t_.sync_.EndStep(t_.clock_).WithContext(where));
  }
  if (t_.sync_.CutAfter(t_.clock_)) {
    if (step == steps_) NotePosition(t_.clock_);  // no batch was drawn after it
    RETURN_IF_ERROR(t_.TakeCheckpoint(t_.noted_position_).WithContext(where + " checkpoint"));
  }
  figures.wait_ms = MillisSince(phase);
  return Status::Ok();
}

Status Trainer::StepLoop::AfterStep(uint32_t step, const std::string& where, StepBuffers& current,
                                    StepFigures& figures) {
  if (!after_step_) return Status::Ok();
  if (step == steps_) NotePosition(t_.clock_);
  if (pipeline()) {
    RETURN_IF_ERROR(WaitAll(current.pushes).WithContext(where + " push"));
  }
  t_.completed_steps_ = step;
  ASSIGN_OR_RETURN(figures.stop, after_step_(step));
  return Status::Ok();
}

Result<TrainSummary> Trainer::Run(uint32_t steps,
                                  const std::function<void(const WindowStats&)>& on_window,
                                  const StepHook& after_step) {
  const uint32_t batch_size = options_.batch_size;
  const uint32_t log_every = options_.log_every > 0 ? options_.log_every : steps;
  TrainSummary summary;
  summary.backend = std::string(backend_->name());
  StepLoop loop(*this, steps, after_step);
  ran_ = true;

  const uint32_t first_step = completed_steps_ + 1;
  WindowAccumulator window;
  window.first_step = first_step;
  const auto run_start = Clock::now();
  uint32_t last_step = first_step - 1;
  if (lookahead_) lookahead_->ExpectOnly(first_step <= steps ? steps - first_step + 1 : 0);
  RETURN_IF_ERROR(loop.Start(first_step));
  for (uint32_t step = first_step; step <= steps; ++step) {
    ASSIGN_OR_RETURN(const StepFigures figures, loop.RunStep(step));
    last_step = step;
    window.Add(figures, batch_size);
    summary.samples += batch_size;
    if (step % log_every == 0 || step == steps || figures.stop) {
      WindowStats finished = window.Finish(step);
      summary.windows.push_back(finished);
      if (on_window) on_window(finished);
      window = WindowAccumulator{};
      window.first_step = step + 1;
    }
    if (figures.stop) break;
  }
  RETURN_IF_ERROR(loop.DrainAll().WithContext("final push"));
  RETURN_IF_ERROR(client_->scheduler().Leave(client_->trainer_id(), clock_));
  completed_steps_ = last_step;
  summary.steps = last_step - (first_step - 1);
  summary.seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
  summary.samples_per_second = summary.seconds > 0 ? summary.samples / summary.seconds : 0;
  summary.cuts = sync_.TakeRecords();
  if (!summary.windows.empty()) {
    summary.first_window = summary.windows.front();
    summary.last_window = summary.windows.back();
  }
  return summary;
}

}  // namespace ember::trainer
