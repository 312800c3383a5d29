// RunLog implementation.
#include "local/run_log.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

namespace ember::local {

using Json = nlohmann::ordered_json;  // keys in the order written

double EtaSeconds(const trainer::WindowStats& window, uint32_t steps, uint32_t batch_size) {
  if (!(window.samples_per_second > 0) || window.last_step > steps) return -1;
  return (steps - window.last_step) * static_cast<double>(batch_size) / window.samples_per_second;
}

Result<std::unique_ptr<RunLog>> RunLog::Open(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    return InvalidArgument("--log-jsonl '" + path + "': " + std::strerror(errno));
  }
  return std::unique_ptr<RunLog>(new RunLog(path, file));
}

RunLog::RunLog(std::string path, std::FILE* file) : path_(std::move(path)), file_(file) {}

RunLog::~RunLog() { std::fclose(file_); }

Status RunLog::Window(const trainer::WindowStats& w, uint32_t steps, uint32_t batch_size) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double eta = EtaSeconds(w, steps, batch_size);
  Json line = {{"kind", "window"},
               {"elapsed_s", elapsed},
               {"first_step", w.first_step},
               {"step", w.last_step},
               {"steps", steps},
               {"loss", w.loss},
               {"samples_per_second", w.samples_per_second},
               {"pull_ms", w.pull_ms},
               {"compute_ms", w.compute_ms},
               {"push_ms", w.push_ms},
               {"wait_ms", w.wait_ms},
               {"device_busy", w.device_busy},
               {"rows_per_step", w.unique_keys},
               {"eta_s", eta >= 0 ? Json(eta) : Json(nullptr)}};
  return WriteLine(line.dump(-1, ' ', false, Json::error_handler_t::replace));
}

Status RunLog::Summary(const std::string& summary_json) {
  Json summary = Json::parse(summary_json, nullptr, /*allow_exceptions=*/false);
  if (summary.is_discarded() || !summary.is_object()) {
    return Internal("the summary record is not a JSON object");
  }
  Json line = {{"kind", "summary"}};
  line.update(summary);
  return WriteLine(line.dump(-1, ' ', false, Json::error_handler_t::replace));
}

Status RunLog::WriteLine(const std::string& line) {
  if (std::fputs(line.c_str(), file_) < 0 || std::fputc('\n', file_) == EOF ||
      std::fflush(file_) != 0) {
    return DataLoss("writing '" + path_ + "': " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace ember::local
