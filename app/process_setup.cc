// Logging and signal set-up.
#include "app/process_setup.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <string>

namespace ember::app {
namespace {

std::atomic<bool>* g_stop_flag = nullptr;

void OnStopSignal(int) {
  if (g_stop_flag != nullptr) g_stop_flag->store(true, std::memory_order_relaxed);
}

}  // namespace

void SetUpLogging(std::string_view role) {
  spdlog::set_pattern("%H:%M:%S.%e " + std::string(role) + " %^%l%$ %v");
  const char* level = std::getenv("EMBER_LOG_LEVEL");
  spdlog::set_level(level != nullptr ? spdlog::level::from_str(level) : spdlog::level::info);
}

void StopOnSignals(std::atomic<bool>* flag) {
  g_stop_flag = flag;
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace ember::app
