// Shared helpers for ember's tests: temporary directories and child processes stopped by PID.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace ember::testing {

// A fresh directory under TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A child process started with posix_spawn. The destructor sends SIGTERM, waits up to 5 s, then
// SIGKILLs, so a failing test never leaves it running.
class ChildProcess {
 public:
  // Starts `argv[0]` with `argv`; stdout and stderr go to `log_path` (appended) when non-empty.
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path = "");
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool started() const { return pid_ > 0; }
  // Waits for exit up to `timeout`; returns the exit status (as from waitpid's WEXITSTATUS,
  // 128+signal when killed by a signal) or -1 on timeout.
  int WaitExit(std::chrono::milliseconds timeout);
  // SIGTERM, bounded wait, then SIGKILL. Safe to call twice.
  void Stop();
  bool running();

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int exit_code_ = -1;
};

// Reads a whole file into a string (empty when missing).
std::string ReadFile(const std::string& path);

}  // namespace ember::testing
