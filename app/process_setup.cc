// Allocator and signal set-up.
#include "app/process_setup.h"

#include <malloc.h>
#include <signal.h>

#include <filesystem>
#include <string>

namespace ember::app {
namespace {

std::atomic<bool>* g_stop_flag = nullptr;

void OnStopSignal(int) {
  if (g_stop_flag != nullptr) g_stop_flag->store(true, std::memory_order_relaxed);
}

}  // namespace

void KeepLargeAllocationsInTheHeap() {
  // glibc serves blocks above the mmap threshold from fresh mappings, each of which the kernel
  // must fault in and zero again. Raising the threshold above the largest frame and keeping freed
  // memory (instead of trimming it) makes a request's buffers reuse the previous request's pages.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

std::string SelfExecutable() {
  std::error_code error;
  auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string() : path.string();
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
