// The extension module _ember: ember's C++ client, data and evaluation for Python. The package
// ember (python/ember/) wraps it; users import that, not this.
#include <chrono>

#include "python/binding.h"

namespace ember::python {
namespace {

// The exception classes, made once by BindErrors (owned by the module; never freed).
struct ExceptionClasses {
  PyObject* base = nullptr;
  PyObject* invalid_argument = nullptr;
  PyObject* not_found = nullptr;
  PyObject* deadline_exceeded = nullptr;
  PyObject* unavailable = nullptr;
  PyObject* permission_denied = nullptr;
};
ExceptionClasses exceptions;

PyObject* MakeException(py::module_& module, const char* name, PyObject* python_base,
                        const char* doc) {
  const std::string qualified = std::string("ember.") + name;
  py::tuple bases = exceptions.base == nullptr
                        ? py::make_tuple(py::handle(python_base))
                        : py::make_tuple(py::handle(exceptions.base), py::handle(python_base));
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (type == nullptr) throw py::error_already_set();
  module.add_object(name, py::handle(type));
  return type;
}

PyObject* ExceptionFor(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument:
      return exceptions.invalid_argument;
    case StatusCode::kNotFound:
      return exceptions.not_found;
    case StatusCode::kDeadlineExceeded:
      return exceptions.deadline_exceeded;
    case StatusCode::kUnavailable:
      return exceptions.unavailable;
    case StatusCode::kPermissionDenied:
      return exceptions.permission_denied;
    default:
      return exceptions.base;
  }
}

// Raised from C++: translated to the Python exception it names.
struct StatusError {
  Status status;
};

}  // namespace

void BindErrors(py::module_& module) {
  exceptions.base = MakeException(module, "EmberError", PyExc_RuntimeError,
                                  "An error ember reported; the message starts with its code.");
  exceptions.invalid_argument = MakeException(module, "InvalidArgumentError", PyExc_ValueError,
                                              "Bad input: a wrong dtype, shape, table or value.");
  exceptions.not_found =
      MakeException(module, "NotFoundError", PyExc_LookupError, "Something named is not there.");
  exceptions.deadline_exceeded =
      MakeException(module, "DeadlineExceededError", PyExc_TimeoutError, "No answer in time.");
  exceptions.unavailable = MakeException(module, "UnavailableError", PyExc_ConnectionError,
                                         "A server or the scheduler cannot be reached.");
  exceptions.permission_denied =
      MakeException(module, "PermissionDeniedError", PyExc_PermissionError,
                    "This client's key may not make that request.");
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer) std::rethrow_exception(pointer);
    } catch (const StatusError& error) {
      PyErr_SetString(ExceptionFor(error.status.code()), error.status.ToString().c_str());
    }
  });
}

void ThrowStatus(const Status& status) { throw StatusError{status}; }

bool WaitInterruptibly(const std::function<bool(Millis)>& wait_step, double timeout_s) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (WithoutGil([&] { return wait_step(Millis(100)); })) return true;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (timeout_s >= 0 && waited >= timeout_s) return false;
  }
}

}  // namespace ember::python

PYBIND11_MODULE(_ember, module) {
  module.doc() = "ember's C++ client, data and evaluation (use the package `ember`)";
  // Where LocalCluster looks for the `ember` binary (after $EMBER_BINARY).
  module.attr("build_binary") = EMBER_BUILD_BINARY;
  module.attr("installed_binary") = EMBER_INSTALLED_BINARY;
  ember::python::BindErrors(module);
  ember::python::BindClient(module);
  ember::python::BindData(module);
  ember::python::BindProcesses(module);
}
