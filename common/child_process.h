// ChildProcess: a process started from argv that is always stopped by PID.
//
// The child is told by the kernel to exit when its parent dies (PR_SET_PDEATHSIG), and the
// destructor stops it (SIGTERM, a bounded wait, then SIGKILL), so neither a crashed parent nor a
// failed test leaves orphans behind. The kernel's "parent" is the thread that started the child:
// the child gets SIGTERM when that thread ends, so start long-lived children from a thread that
// outlives them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace ember {

class ChildProcess {
 public:
  // Starts argv[0] (a path) with `argv`; stdout and stderr go to `log_path` (appended) when it is
  // non-empty, else they are inherited. started() is false if it could not be started.
  explicit ChildProcess(const std::vector<std::string>& argv, const std::string& log_path = "");
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool started() const { return pid_ > 0; }
  bool running();
  // Waits for exit up to `timeout`; the exit code (128 + signal when killed by a signal), or -1
  // if it is still running.
  int WaitExit(std::chrono::milliseconds timeout);
  // Sends `signal` if the child is still running.
  void Signal(int signal);
  // SIGTERM, up to `grace` to exit, then SIGKILL. Safe to call more than once.
  void Stop(std::chrono::milliseconds grace = std::chrono::seconds(5));
  int exit_code() const { return exit_code_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int exit_code_ = -1;
};

}  // namespace ember
