// What the parts of the Python module _ember share: ember's errors as Python exceptions, waiting
// with the GIL released (and Ctrl-C honoured), and the registration function of each
// part (module.cc calls them in order).
#pragma once

#include <pybind11/pybind11.h>

#include <functional>

#include "common/millis.h"
#include "common/status.h"

namespace ember::python {

namespace py = pybind11;

// Creates the exception classes in `module`: EmberError (a RuntimeError) and, for the status codes
// Python has a natural class for, a subclass of both: InvalidArgumentError (ValueError),
// NotFoundError (LookupError), DeadlineExceededError (TimeoutError), UnavailableError
// (ConnectionError), PermissionDeniedError (PermissionError).
void BindErrors(py::module_& module);
// Raises `status` (not OK) as the matching exception, with ember's message.
[[noreturn]] void ThrowStatus(const Status& status);
inline void ThrowIfError(const Status& status) {
  if (!status.ok()) ThrowStatus(status);
}
template <typename T>
T ValueOrThrow(Result<T> result) {
  if (!result.ok()) ThrowStatus(result.status());
  return std::move(*result);
}

// Runs `call` with the GIL released (it must not touch Python objects); returns what it returns.
template <typename Call>
auto WithoutGil(Call&& call) {
  py::gil_scoped_release release;
  return call();
}

// Calls `wait_step(100 ms)` with the GIL released until it returns true (done) or `timeout_s`
// passed (< 0: no limit), looking at Python's signals between steps: a pending KeyboardInterrupt
// (or another signal handler's exception) is raised at once, leaving what was waited for to
// finish in the background. Whether it was done.
bool WaitInterruptibly(const std::function<bool(Millis)>& wait_step, double timeout_s);

void BindClient(py::module_& module);     // client_binding.cc: Client, Future
void BindData(py::module_& module);       // data_binding.cc: InteractionData, evaluation
void BindProcesses(py::module_& module);  // process_binding.cc: ChildProcess

}  // namespace ember::python
