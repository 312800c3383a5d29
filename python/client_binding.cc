// ember.Client and ember.Future bound to Python: their methods, arguments and docstrings
// (python_client.h declares them).
#include <pybind11/stl.h>

#include "python/python_client.h"

namespace ember::python {

namespace {

using ClientClass = py::class_<PythonClient>;

// Pulls, pushes and lookups.
void BindDataPlane(ClientClass& client) {
  client
      .def("pull", &PythonClient::Pull, py::arg("table"), py::arg("keys"),
           py::arg("out") = py::none(),
           "The rows of `keys` (uint64 ids, or int64 ones read as their unsigned bit pattern) as a "
           "float32 array (n, dim), created on first pull; filled into `out` when given (a "
           "C-contiguous, writable float32 array of that shape; a strided view is refused).")
      .def("push", &PythonClient::Push, py::arg("table"), py::arg("keys"), py::arg("gradients"),
           py::arg("learning_rate") = 0.0f,
           "Applies one gradient row per key (float32, (n, dim)) with the table's server-side "
           "optimizer; sum the gradients of duplicate keys first. `learning_rate` > 0 replaces "
           "the table's for this push (a schedule); 0 keeps the table's.")
      .def("pull_async", &PythonClient::PullAsync, py::arg("table"), py::arg("keys"),
           py::arg("out") = py::none(),
           "pull() without waiting: a Future whose result() is the rows. The arrays are kept "
           "alive until the pull finished; do not read `out` before that.")
      .def(
          "pull_tables",
          [](PythonClient& client, const py::sequence& requests, const py::object& out) {
            return client.PullTablesAsync(requests, out).Result(std::nullopt);
          },
          py::arg("requests"), py::arg("out") = py::none(),
          "One pull of several tables: `requests` is a list of (table, keys) pairs (a table may "
          "come more than once); each server gets one request for its keys of all of them. "
          "Returns the list of their rows, in order (filled into `out`, a list of arrays or "
          "None, one per pair, when given).")
      .def("pull_tables_async", &PythonClient::PullTablesAsync, py::arg("requests"),
           py::arg("out") = py::none(),
           "pull_tables() without waiting: a Future whose result() is the list of rows.")
      .def("push_async", &PythonClient::PushAsync, py::arg("table"), py::arg("keys"),
           py::arg("gradients"), py::arg("learning_rate") = 0.0f,
           "push() without waiting: a Future whose result() is None once the servers applied it.")
      .def("lookup", &PythonClient::Lookup, py::arg("table"), py::arg("keys"),
           py::arg("missing") = "initial",
           "The rows of `keys` as the servers hold them (float32, (n, dim)), read without "
           "creating or changing anything there (serving). A key without a row gets its initial "
           "row (missing='initial'), or zeros (missing='flag', which returns (rows, found) with "
           "found a bool array, False for keys without a row).")
      .def("initial_rows", &PythonClient::InitialRows, py::arg("table"), py::arg("keys"),
           "The rows `keys` start with (the table's deterministic initialiser), computed locally.");
}

// The calls to the cluster as a whole, and the client's own figures.
void BindClusterCalls(ClientClass& client) {
  client
      .def("tables", &PythonClient::Tables,
           "The cluster's tables: a list of dicts (name, dim, optimizer, learning_rate, "
           "initializer, seed, admit_after, ttl_seconds).")
      .def("status", &PythonClient::ClusterStatusDict,
           "The scheduler's view: routing epoch, partitions, servers (id, endpoint, state, "
           "partitions) and partition moves planned, in flight and done.")
      .def("stats", &PythonClient::Stats,
           "Each server's figures: requests, keys pulled and pushed, errors, partitions, and per "
           "table its rows, bytes, resident rows and bytes on disk.")
      .def("checkpoint", &PythonClient::Checkpoint, py::arg("dir"), py::arg("step") = 0,
           "Has every server write its rows into `dir` (a checkpoint restorable into any server "
           "count; consistent when no push is in flight); returns the absolute path.")
      .def("restore", &PythonClient::Restore, py::arg("dir"),
           "Loads the checkpoint in `dir` (or the newest under it) into the servers; returns its "
           "step.")
      .def("barrier", &PythonClient::Barrier, py::arg("name"), py::arg("count"),
           py::arg("timeout") = 60.0,
           "Waits until `count` clients reached the barrier `name` (DeadlineExceededError after "
           "`timeout` seconds).")
      .def("close", &PythonClient::Close, py::arg("leave") = true, py::arg("reason") = "",
           "Leaves the cluster (unless leave=False: it is known to be gone) and disconnects; "
           "operations in flight fail, later calls raise EmberError naming `reason`. Safe to "
           "call more than once.")
      .def_property_readonly("trainer_id", &PythonClient::trainer_id,
                             "The id the scheduler gave this client.")
      .def_property_readonly("requests_resent", &PythonClient::requests_resent,
                             "Requests sent again after a server's connection came back.")
      .def_property_readonly("timeout", &PythonClient::timeout,
                             "Seconds a request may take before DeadlineExceededError.");
}

// The steps of a synchronised run.
void BindSyncedSteps(ClientClass& client) {
  client
      .def_property_readonly("sync", &PythonClient::SyncDict,
                             "How the run synchronises its trainers (the scheduler's word): mode "
                             "('asp', 'bsp', 'ssp'), staleness, combine, trainers, clock_timeout.")
      .def_property_readonly("clock", &PythonClient::clock,
                             "Steps this trainer completed (end_step() counts them); pushes "
                             "belong to step clock + 1.")
      .def_property_readonly("rank", &PythonClient::rank, "This trainer's rank in its run.")
      .def("end_step", &PythonClient::EndStep,
           "Ends the step under way, once its pushes were applied or acknowledged: reports it to "
           "the scheduler (bsp and ssp wait for the other trainers there) and, in bsp, has the "
           "servers apply its pushes. Returns the checkpoint cut due now ({'clock', 'dir', "
           "'file'}: write this trainer's state into 'file', then call take_cut()) or None.")
      .def("take_cut", &PythonClient::TakeCut, py::arg("error") = "",
           "Takes the cut end_step() announced, once this trainer's file is written (or with "
           "`error` saying why it could not be): the trainers meet, and one has the servers "
           "write their rows and the manifest. Whether the cut was written whole (a failed one "
           "is logged, and training goes on).");
}

}  // namespace

void BindClient(py::module_& module) {
  py::class_<Future>(module, "Future", "An asynchronous pull or push.")
      .def("result", &Future::Result, py::arg("timeout") = py::none(),
           "Waits for the operation (Ctrl-C interrupts the wait); the rows of a pull, None for a "
           "push. Raises the operation's error.")
      .def("done", &Future::Done, "Whether the operation finished.");

  ClientClass client(module, "Client", "A trainer's connection to an ember cluster.");
  client.def(py::init<const std::string&, const std::string&, const std::string&,
                      const std::string&, double, double, double, uint32_t, uint32_t, bool,
                      bool>(),
             py::arg("scheduler"), py::arg("key") = "", py::arg("scheduler_key") = "",
             py::arg("name") = "python", py::arg("timeout") = 30.0,
             py::arg("register_timeout") = 60.0, py::arg("heartbeat_interval") = 1.0,
             py::arg("max_keys_per_message") = 4096, py::arg("rank") = 0,
             py::arg("wire_fp16") = false, py::arg("read_only") = false);
  BindDataPlane(client);
  BindClusterCalls(client);
  BindSyncedSteps(client);
}

}  // namespace ember::python
