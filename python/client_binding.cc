// ember.Client and ember.Future: a thin binding of ps::Client (ps/client/client.h).
//
// Pulled rows land in the numpy array the caller gets (or passes as `out`) with no extra copy;
// keys are read in place when they are a contiguous uint64 or int64 array (an int64 key is its
// unsigned bit pattern, so that torch's int64 tensors carry every uint64 key).
// The client reads and writes those buffers from its I/O thread until the operation finishes, so
// every operation keeps its arrays alive until then, also when the caller dropped its Future
// (e.g. after Ctrl-C): the client holds them in `in_flight_` and lets go once the ticket is done.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/checkpoint_layout.h"
#include "embedding/initializer.h"
#include "embedding/table_config.h"
#include "local/security_config.h"
#include "ps/client/checkpoint.h"
#include "ps/client/client.h"
#include "python/binding.h"

namespace ember::python {
namespace {

using FloatArray = py::array_t<float, py::array::c_style>;
using KeyArray = py::array_t<uint64_t, py::array::c_style>;

std::string ShapeText(const py::array& array) {
  std::string text = "(";
  for (py::ssize_t i = 0; i < array.ndim(); ++i) {
    text += (i ? ", " : "") + std::to_string(array.shape(i));
  }
  return text + (array.ndim() == 1 ? ",)" : ")");
}

std::string DtypeText(const py::array& array) { return py::str(array.dtype()).cast<std::string>(); }

// `keys` as a contiguous uint64 array: the caller's own buffer when it already is one, or an int64
// one read as its unsigned bit pattern (torch has no uint64: a key above 2^63 is a negative int64
// there), else a converted copy. A narrower signed type must not hold negative ids.
KeyArray ToKeys(const py::handle& keys) {
  py::array array = py::array::ensure(keys);
  if (!array) ThrowStatus(InvalidArgument("keys: expected an array of integer ids"));
  if (array.ndim() != 1) {
    ThrowStatus(
        InvalidArgument("keys: expected a 1-D array of ids, got shape " + ShapeText(array)));
  }
  const char kind = array.dtype().kind();
  if (kind != 'u' && kind != 'i') {
    ThrowStatus(
        InvalidArgument("keys: expected integer ids (uint64 or int64), got " + DtypeText(array)));
  }
  if (kind == 'i') {
    auto signed_keys =
        py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(array);
    if (array.itemsize() < 8) {
      const int64_t* data = signed_keys.data();
      for (py::ssize_t i = 0; i < signed_keys.size(); ++i) {
        if (data[i] < 0) {
          ThrowStatus(InvalidArgument("keys: id " + std::to_string(data[i]) + " at position " +
                                      std::to_string(i) + " is negative (" + DtypeText(array) +
                                      ")"));
        }
      }
    }
    return py::reinterpret_borrow<KeyArray>(signed_keys.attr("view")("uint64"));
  }
  return KeyArray::ensure(array);
}

// Whether a client was closed, and why: shared with its futures, so that a wait ends as soon as
// the client is closed (by another thread: LocalCluster's, when its processes exited) rather than
// when the closing client's threads have stopped.
struct Closing {
  std::atomic<bool> closed{false};
  std::string reason;  // written before `closed` is set, read after it was seen set

  Status AsError() const {
    return FailedPrecondition("the client is closed" + (reason.empty() ? "" : ": " + reason));
  }
};

// A Future: an operation's ticket and, for a pull, the rows it fills.
class Future {
 public:
  Future(ps::Ticket ticket, py::object value, std::shared_ptr<const Closing> closing)
      : ticket_(std::move(ticket)), value_(std::move(value)), closing_(std::move(closing)) {}

  // The pulled rows (a pull) or None (a push), once the operation finished; raises its error.
  // `timeout` in seconds (None: as long as it takes) raises DeadlineExceededError when it passes;
  // the client being closed ends the wait at once.
  py::object Result(std::optional<double> timeout) {
    const auto done_or_closed = [&](Millis step) {
      return ticket_.WaitFor(step) || closing_->closed.load(std::memory_order_acquire);
    };
    if (!WaitInterruptibly(done_or_closed, timeout.value_or(-1))) {
      ThrowStatus(DeadlineExceeded("the operation did not finish within " +
                                   std::to_string(*timeout) + " s"));
    }
    // Unfinished, or aborted, because the client was closed: say why it was.
    if (closing_->closed.load(std::memory_order_acquire) &&
        (!ticket_.ready() || ticket_.Wait().code() == StatusCode::kAborted)) {
      ThrowStatus(closing_->AsError());
    }
    ThrowIfError(ticket_.Wait());
    return value_;
  }
  bool Done() const { return ticket_.ready(); }

 private:
  ps::Ticket ticket_;
  py::object value_;
  std::shared_ptr<const Closing> closing_;
};

class PythonClient {
 public:
  PythonClient(const std::string& scheduler, const std::string& key,
               const std::string& scheduler_key, const std::string& name, double timeout_s,
               double register_timeout_s, double heartbeat_s, uint32_t max_keys_per_message) {
    for (const auto& [what, seconds] :
         {std::pair{"timeout", timeout_s}, std::pair{"register_timeout", register_timeout_s}}) {
      if (!(seconds > 0)) {
        ThrowStatus(InvalidArgument(std::string(what) + ": must be > 0 seconds, got " +
                                    std::to_string(seconds)));
      }
    }
    if (!(heartbeat_s >= 0)) {
      ThrowStatus(InvalidArgument("heartbeat_interval: must be >= 0 seconds (0: none)"));
    }
    ps::ClientOptions options;
    options.scheduler_endpoint = scheduler;
    options.name = name;
    options.request_timeout = Millis(static_cast<int64_t>(timeout_s * 1000));
    options.register_timeout = Millis(static_cast<int64_t>(register_timeout_s * 1000));
    options.heartbeat_interval = Millis(static_cast<int64_t>(heartbeat_s * 1000));
    options.max_keys_per_message = max_keys_per_message;
    if (!key.empty() || !scheduler_key.empty()) {
      options.security = ValueOrThrow(local::BuildTransportSecurity(
          {.key_file = key, .scheduler_key = scheduler_key}, "", /*insecure=*/false));
    }
    timeout_ = options.request_timeout;
    client_ = ValueOrThrow(WithoutGil([&] { return ps::Client::Connect(std::move(options)); }));
  }

  ~PythonClient() { Close(/*leave=*/true, ""); }

  // Leaves the scheduler (nobody waits for this trainer any more, unless `leave` is false: the
  // cluster is known to be gone) and disconnects; what is still in flight fails with Aborted.
  // Later calls fail with "the client is closed", and `reason` (if given) after it. Safe to call
  // more than once.
  void Close(bool leave, const std::string& reason) {
    std::shared_ptr<ps::Client> client = std::move(client_);
    if (!client) return;
    closing_->reason = reason;
    closing_->closed.store(true, std::memory_order_release);
    {
      py::gil_scoped_release release;
      if (leave) (void)client->scheduler().Leave(client->trainer_id(), 0, Millis(2'000));
      client.reset();  // unless another thread's call still holds it
    }
    in_flight_.clear();
  }

  py::object Pull(const std::string& table, const py::handle& keys, const py::object& out) {
    return PullAsync(table, keys, out).Result(std::nullopt);
  }
  void Push(const std::string& table, const py::handle& keys, const py::handle& gradients,
            float learning_rate) {
    PushAsync(table, keys, gradients, learning_rate).Result(std::nullopt);
  }

  Future PullAsync(const std::string& table, const py::handle& keys, const py::object& out) {
    std::shared_ptr<ps::Client> client = Connected();
    const TableSpec* spec = ValueOrThrow(client->FindTable(table));
    KeyArray key_array = ToKeys(keys);
    const size_t n = static_cast<size_t>(key_array.size());
    FloatArray rows;
    if (out.is_none()) {
      rows = FloatArray({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(spec->dim)});
    } else {
      rows = CheckedOut(out, n, spec->dim);
    }
    ps::Ticket ticket =
        client->Pull(table, {key_array.data(), n}, {rows.mutable_data(), n * spec->dim});
    Remember(ticket, py::make_tuple(key_array, rows));
    return Future(std::move(ticket), rows, closing_);
  }

  // One pull of several tables, one request per server for all of them (Client::Pull of
  // TablePulls): `requests` is a sequence of (table, keys) pairs, `outs` None or one array (or
  // None) per pair. The result is the list of their rows, in order.
  Future PullTablesAsync(const py::sequence& requests, const py::object& outs) {
    std::shared_ptr<ps::Client> client = Connected();
    const size_t count = py::len(requests);
    std::optional<py::sequence> out_list;
    if (!outs.is_none()) {
      out_list = outs.cast<py::sequence>();
      if (py::len(*out_list) != count) {
        ThrowStatus(InvalidArgument("out: " + std::to_string(py::len(*out_list)) +
                                    " arrays for " + std::to_string(count) + " tables"));
      }
    }
    std::vector<std::string> names;
    names.reserve(count);  // the pulls below point into these strings
    std::vector<ps::TablePull> pulls;
    py::list buffers, results;
    for (size_t i = 0; i < count; ++i) {
      py::object request = requests[i];
      if (!py::isinstance<py::sequence>(request) || py::isinstance<py::str>(request) ||
          py::len(request) != 2) {
        ThrowStatus(InvalidArgument("requests[" + std::to_string(i) +
                                    "]: expected a (table, keys) pair"));
      }
      names.push_back(request[py::int_(0)].cast<std::string>());
      const TableSpec* spec = ValueOrThrow(client->FindTable(names.back()));
      KeyArray key_array = ToKeys(request[py::int_(1)]);
      const size_t n = static_cast<size_t>(key_array.size());
      py::object out = out_list ? py::object((*out_list)[i]) : py::none();
      FloatArray rows =
          out.is_none()
              ? FloatArray({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(spec->dim)})
              : CheckedOut(out, n, spec->dim);
      pulls.push_back({names.back(), {key_array.data(), n}, {rows.mutable_data(), n * spec->dim}});
      buffers.append(key_array);
      buffers.append(rows);
      results.append(rows);
    }
    ps::Ticket ticket = client->Pull(pulls);
    Remember(ticket, buffers);
    return Future(std::move(ticket), results, closing_);
  }

  Future PushAsync(const std::string& table, const py::handle& keys, const py::handle& gradients,
                   float learning_rate) {
    std::shared_ptr<ps::Client> client = Connected();
    const TableSpec* spec = ValueOrThrow(client->FindTable(table));
    KeyArray key_array = ToKeys(keys);
    const size_t n = static_cast<size_t>(key_array.size());
    FloatArray rows = CheckedRows(gradients, n, spec->dim, "gradients");
    ps::Ticket ticket = client->Push(table, {key_array.data(), n}, {rows.data(), n * spec->dim},
                                     /*clock=*/0, /*deferred=*/false, /*release_hint=*/0,
                                     learning_rate);
    Remember(ticket, py::make_tuple(key_array, rows));
    return Future(std::move(ticket), py::none(), closing_);
  }

  // The rows of `keys` as the servers hold them, changing nothing there (Client::Lookup): a key
  // without a row gets its initial row (missing "initial"), or zeros and a False found flag
  // (missing "flag", which returns (rows, found)).
  py::object Lookup(const std::string& table, const py::handle& keys, const std::string& missing) {
    if (missing != "initial" && missing != "flag") {
      ThrowStatus(InvalidArgument("missing: 'initial' or 'flag', not '" + missing + "'"));
    }
    const bool flag = missing == "flag";
    std::shared_ptr<ps::Client> client = Connected();
    const TableSpec* spec = ValueOrThrow(client->FindTable(table));
    KeyArray key_array = ToKeys(keys);
    const size_t n = static_cast<size_t>(key_array.size());
    FloatArray rows({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(spec->dim)});
    py::array_t<bool> found(static_cast<py::ssize_t>(n));
    static_assert(sizeof(bool) == sizeof(uint8_t));
    ps::Ticket ticket =
        client->Lookup(table, {key_array.data(), n}, {rows.mutable_data(), n * spec->dim},
                       flag ? MissingRows::kFlag : MissingRows::kInitial,
                       {reinterpret_cast<uint8_t*>(found.mutable_data()), n});
    Remember(ticket, py::make_tuple(key_array, rows, found));
    py::object value = flag ? py::object(py::make_tuple(rows, found)) : py::object(rows);
    return Future(std::move(ticket), std::move(value), closing_).Result(std::nullopt);
  }

  // The rows `keys` start with in `table` (the deterministic initialiser), computed here.
  FloatArray InitialRows(const std::string& table, const py::handle& keys) {
    const TableSpec* spec = ValueOrThrow(Connected()->FindTable(table));
    KeyArray key_array = ToKeys(keys);
    FloatArray rows({key_array.size(), static_cast<py::ssize_t>(spec->dim)});
    for (py::ssize_t i = 0; i < key_array.size(); ++i) {
      embedding::InitializeRow(*spec, key_array.data()[i],
                               {rows.mutable_data() + i * spec->dim, spec->dim});
    }
    return rows;
  }

  py::list Tables() {
    py::list tables;
    std::shared_ptr<ps::Client> client = Connected();
    for (const TableSpec& spec : client->tables()) {
      py::dict table;
      table["name"] = spec.name;
      table["dim"] = spec.dim;
      table["optimizer"] = std::string(embedding::OptimizerKindName(spec.optimizer.kind));
      table["learning_rate"] = spec.optimizer.learning_rate;
      table["initializer"] = std::string(embedding::InitializerKindName(spec.initializer.kind));
      table["seed"] = spec.seed;
      table["admit_after"] = spec.admit_after;
      table["ttl_seconds"] = spec.ttl_seconds;
      tables.append(table);
    }
    return tables;
  }

  py::dict ClusterStatusDict() {
    std::shared_ptr<ps::Client> client = Connected();
    ClusterStatus cluster =
        ValueOrThrow(WithoutGil([&] { return client->scheduler().GetClusterStatus(timeout_); }));
    py::dict out;
    out["epoch"] = cluster.routing.epoch;
    out["partitions"] = cluster.routing.num_partitions;
    py::list servers;
    for (const ServerStatus& server : cluster.servers) {
      py::dict entry;
      entry["id"] = server.id;
      entry["endpoint"] = server.endpoint;
      entry["state"] = server.state;
      entry["partitions"] = server.partitions;
      servers.append(entry);
    }
    out["servers"] = servers;
    out["moves_in_flight"] = cluster.moves_in_flight;
    out["moves_planned"] = cluster.moves_planned;
    out["moves_done"] = cluster.moves_done;
    return out;
  }

  py::list Stats() {
    std::shared_ptr<ps::Client> client = Connected();
    const std::vector<ServerStats> stats =
        ValueOrThrow(WithoutGil([&] { return client->Stats(timeout_); }));
    py::list out;
    for (const ServerStats& server : stats) {
      py::dict entry;
      entry["server"] = server.server_id;
      entry["pull_requests"] = server.pull_requests;
      entry["push_requests"] = server.push_requests;
      entry["keys_pulled"] = server.keys_pulled;
      entry["keys_pushed"] = server.keys_pushed;
      entry["errors"] = server.errors;
      entry["partitions"] = server.partitions_owned;
      py::dict tables;
      for (const TableStats& table : server.tables) {
        py::dict sizes;
        sizes["rows"] = table.rows;
        sizes["bytes"] = table.bytes;
        sizes["resident_rows"] = table.resident_rows;
        sizes["disk_bytes"] = table.disk_bytes;
        tables[py::str(table.name)] = sizes;
      }
      entry["tables"] = tables;
      out.append(entry);
    }
    return out;
  }

  // Every server writes its partitions into `dir`, then the manifest makes it a checkpoint of
  // the servers alone (restorable into any server count). Consistent when no push is in flight.
  std::string Checkpoint(const std::string& dir, uint64_t step) {
    std::shared_ptr<ps::Client> client = Connected();
    const std::string absolute = std::filesystem::absolute(dir).lexically_normal().string();
    const Status written = WithoutGil([&] {
      Result<Manifest> manifest = ps::CheckpointServers(*client, absolute, step, timeout_);
      return manifest.ok() ? WriteManifest(absolute, *manifest) : manifest.status();
    });
    ThrowIfError(written.WithContext("checkpoint into " + absolute));
    return absolute;
  }

  // Loads a checkpoint (or the newest under `dir`) into the servers; returns its step.
  uint64_t Restore(const std::string& dir) {
    std::shared_ptr<ps::Client> client = Connected();
    const std::string absolute = std::filesystem::absolute(dir).string();
    Result<Manifest> manifest = WithoutGil([&]() -> Result<Manifest> {
      ASSIGN_OR_RETURN(std::string found, FindCheckpoint(absolute));
      return ps::RestoreServers(*client, found, timeout_);
    });
    return ValueOrThrow(std::move(manifest)).step;
  }

  void Barrier(const std::string& name, uint32_t count, double timeout_s) {
    std::shared_ptr<ps::Client> client = Connected();
    const Millis timeout(static_cast<int64_t>(timeout_s * 1000));
    ThrowIfError(WithoutGil([&] { return client->scheduler().Barrier(name, count, timeout); }));
  }

  uint32_t trainer_id() { return Connected()->trainer_id(); }
  uint64_t requests_resent() { return Connected()->requests_resent(); }
  double timeout() const { return timeout_.count() / 1000.0; }

 private:
  // The client, held by the caller for the length of its call (Close may run meanwhile).
  std::shared_ptr<ps::Client> Connected() const {
    if (!client_) ThrowStatus(closing_->AsError());
    return client_;
  }

  // `array` as a C-contiguous float32 array of n rows of `dim` (a copy only when it is strided).
  static FloatArray CheckedRows(const py::handle& value, size_t n, uint32_t dim,
                                const std::string& what) {
    py::array array = py::array::ensure(value);
    if (!array) ThrowStatus(InvalidArgument(what + ": expected a float32 array"));
    if (array.dtype().kind() != 'f' || array.itemsize() != 4) {
      ThrowStatus(InvalidArgument(what + ": expected float32, got " + DtypeText(array)));
    }
    if (array.ndim() != 2 || static_cast<size_t>(array.shape(0)) != n ||
        static_cast<uint32_t>(array.shape(1)) != dim) {
      ThrowStatus(InvalidArgument(what + ": expected shape (" + std::to_string(n) + ", " +
                                  std::to_string(dim) + ") for " + std::to_string(n) +
                                  " keys of a table of dim " + std::to_string(dim) + ", got " +
                                  ShapeText(array)));
    }
    return FloatArray::ensure(array);
  }

  // `out` as the array a pull fills in place: C-contiguous float32 of n rows of `dim`, writable
  // (a numpy array, or what shares its memory through __array__: a CPU torch tensor). A strided
  // view is refused rather than filled through a copy the caller would never see.
  static FloatArray CheckedOut(const py::object& out, size_t n, uint32_t dim) {
    if (!py::isinstance<py::array>(out) && !py::hasattr(out, "__array__")) {
      ThrowStatus(InvalidArgument("out: expected a float32 array to fill, got " +
                                  py::str(py::type::of(out).attr("__name__")).cast<std::string>()));
    }
    const py::array given = py::array::ensure(out);
    FloatArray rows = CheckedRows(given, n, dim, "out");
    if (rows.data() != given.data()) {
      ThrowStatus(InvalidArgument(
          "out: expected a C-contiguous float32 array to fill in place, got a strided view "
          "(pass numpy.ascontiguousarray(out) and copy the rows back, or pull without out)"));
    }
    if (!given.writeable()) ThrowStatus(InvalidArgument("out: the array is read-only"));
    return rows;
  }

  // Keeps `buffers` alive until `ticket` finished; forgets those of finished operations.
  void Remember(const ps::Ticket& ticket, py::object buffers) {
    std::erase_if(in_flight_, [](const InFlight& entry) { return entry.ticket.ready(); });
    if (!ticket.ready()) in_flight_.push_back({ticket, std::move(buffers)});
  }

  struct InFlight {
    ps::Ticket ticket;
    py::object buffers;
  };
  std::shared_ptr<ps::Client> client_;
  std::vector<InFlight> in_flight_;  // touched with the GIL held
  std::shared_ptr<Closing> closing_ = std::make_shared<Closing>();
  Millis timeout_{30'000};
};

}  // namespace

void BindClient(py::module_& module) {
  py::class_<Future>(module, "Future", "An asynchronous pull or push.")
      .def("result", &Future::Result, py::arg("timeout") = py::none(),
           "Waits for the operation (Ctrl-C interrupts the wait); the rows of a pull, None for a "
           "push. Raises the operation's error.")
      .def("done", &Future::Done, "Whether the operation finished.");

  py::class_<PythonClient>(module, "Client", "A trainer's connection to an ember cluster.")
      .def(py::init<const std::string&, const std::string&, const std::string&, const std::string&,
                    double, double, double, uint32_t>(),
           py::arg("scheduler"), py::arg("key") = "", py::arg("scheduler_key") = "",
           py::arg("name") = "python", py::arg("timeout") = 30.0,
           py::arg("register_timeout") = 60.0, py::arg("heartbeat_interval") = 1.0,
           py::arg("max_keys_per_message") = 4096)
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
      .def("pull_tables", [](PythonClient& client, const py::sequence& requests,
                             const py::object& out) {
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
           "The rows `keys` start with (the table's deterministic initialiser), computed locally.")
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

}  // namespace ember::python
