// ember._ChildProcess (common/child_process.h): a process that dies with its parent, for
// LocalCluster. Python's subprocess cannot promise that without a pre-exec hook; this can, since
// the kernel sends the child SIGTERM when the thread that started it ends.
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "common/child_process.h"
#include "python/binding.h"

namespace ember::python {
namespace {

// The exit code once the process exited within `timeout_s` (None: no limit), else None; Ctrl-C
// interrupts the wait.
std::optional<int> WaitExit(ChildProcess& process, std::optional<double> timeout_s) {
  int code = -1;
  const bool exited = WaitInterruptibly(
      [&](Millis step) {
        code = process.WaitExit(step);
        return code >= 0;
      },
      timeout_s.value_or(-1));
  return exited ? std::optional<int>(code) : std::nullopt;
}

}  // namespace

void BindProcesses(py::module_& module) {
  py::class_<ChildProcess>(module, "_ChildProcess",
                           "A process started from argv; stopped by PID when this object goes, "
                           "and by the kernel when this process dies.")
      .def(py::init<const std::vector<std::string>&, const std::string&>(), py::arg("argv"),
           py::arg("log_path") = "")
      .def_property_readonly("pid", &ChildProcess::pid)
      .def_property_readonly("started", &ChildProcess::started)
      .def("running", &ChildProcess::running)
      .def("wait", &WaitExit, py::arg("timeout") = py::none(),
           "The exit code (128 + signal when killed), or None if still running after `timeout`.")
      .def("signal", &ChildProcess::Signal, py::arg("signal"))
      .def(
          "stop",
          [](ChildProcess& process, double grace_s) {
            py::gil_scoped_release release;
            process.Stop(Millis(static_cast<int64_t>(grace_s * 1000)));
          },
          py::arg("grace") = 5.0, "SIGTERM, up to `grace` seconds to exit, then SIGKILL.")
      .def_property_readonly("exit_code", &ChildProcess::exit_code);
}

}  // namespace ember::python
