// RunLog: the machine-readable log of a training run (`ember train --log-jsonl FILE`): one JSON
// object per line, {"kind": "window", ...} as each progress window ends, then {"kind": "summary",
// ...} with the fields of the summary record (local/train_summary.h). Every line is flushed as it
// is written, so a run that dies leaves its windows so far. `ember plot` draws these files.
//
// Not thread-safe: the training loop's thread writes it.
#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "common/status.h"
#include "trainer/trainer.h"

namespace ember::local {

// Seconds until step `steps` at the window's rate (batch_size samples a step); < 0 when unknown.
double EtaSeconds(const trainer::WindowStats& window, uint32_t steps, uint32_t batch_size);

class RunLog {
 public:
  // Creates (or truncates) the file; InvalidArgument naming it when it cannot.
  static Result<std::unique_ptr<RunLog>> Open(const std::string& path);
  ~RunLog();
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;

  Status Window(const trainer::WindowStats& window, uint32_t steps, uint32_t batch_size);
  // `summary_json` is TrainSummaryJson's object; it is written on one line with "kind" first.
  Status Summary(const std::string& summary_json);

 private:
  RunLog(std::string path, std::FILE* file);
  Status WriteLine(const std::string& line);

  const std::string path_;
  std::FILE* file_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace ember::local
