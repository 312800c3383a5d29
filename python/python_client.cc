// PythonClient and Future (python_client.h): the data plane (pull, push, lookup) and the calls
// to the cluster (tables, status, stats, checkpoints, barriers).
#include "python/python_client.h"

#include <pybind11/stl.h>

#include <filesystem>

#include "common/checkpoint_layout.h"
#include "embedding/initializer.h"
#include "embedding/table_config.h"
#include "local/security_config.h"
#include "ps/client/checkpoint.h"

namespace ember::python {
namespace {

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

}  // namespace

py::object Future::Result(std::optional<double> timeout) {
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

PythonClient::PythonClient(const std::string& scheduler, const std::string& key,
             const std::string& scheduler_key, const std::string& name, double timeout_s,
             double register_timeout_s, double heartbeat_s, uint32_t max_keys_per_message,
             uint32_t rank, bool wire_fp16, bool read_only)
    : rank_(rank) {
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
  options.row_format = wire_fp16 ? RowFormat::kF16 : RowFormat::kF32;
  options.read_only = read_only;
  if (!key.empty() || !scheduler_key.empty()) {
    options.security = ValueOrThrow(local::BuildTransportSecurity(
        {.key_file = key, .scheduler_key = scheduler_key}, "", /*insecure=*/false));
  }
  timeout_ = options.request_timeout;
  client_ = ValueOrThrow(WithoutGil([&] { return ps::Client::Connect(std::move(options)); }));
  clock_.store(client_->start_clock());
  step_sync_ = std::make_shared<trainer::StepSync>(*client_, client_->sync(), rank_);
}

void PythonClient::Close(bool leave, const std::string& reason) {
  std::shared_ptr<ps::Client> client = std::move(client_);
  if (!client) return;
  step_sync_.reset();
  closing_->reason = reason;
  closing_->closed.store(true, std::memory_order_release);
  {
    py::gil_scoped_release release;
    if (leave && !client->read_only()) {
      (void)client->scheduler().Leave(client->trainer_id(), clock(), Millis(2'000));
    }
    client.reset();  // unless another thread's call still holds it
  }
  in_flight_.clear();
}

py::object PythonClient::Pull(const std::string& table, const py::handle& keys, const py::object& out) {
  return PullAsync(table, keys, out).Result(std::nullopt);
}

void PythonClient::Push(const std::string& table, const py::handle& keys, const py::handle& gradients,
          float learning_rate) {
  PushAsync(table, keys, gradients, learning_rate).Result(std::nullopt);
}

Future PythonClient::PullAsync(const std::string& table, const py::handle& keys, const py::object& out) {
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

Future PythonClient::PullTablesAsync(const py::sequence& requests, const py::object& outs) {
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

Future PythonClient::PushAsync(const std::string& table, const py::handle& keys, const py::handle& gradients,
                 float learning_rate) {
  std::shared_ptr<ps::Client> client = Connected();
  const TableSpec* spec = ValueOrThrow(client->FindTable(table));
  KeyArray key_array = ToKeys(keys);
  const size_t n = static_cast<size_t>(key_array.size());
  FloatArray rows = CheckedRows(gradients, n, spec->dim, "gradients");
  // In a synchronised run a push belongs to the step under way; bsp holds it for its clock.
  ps::Ticket ticket = client->Push(table, {key_array.data(), n}, {rows.data(), n * spec->dim},
                                   clock() + 1, client->sync().mode == SyncMode::kBsp,
                                   /*release_hint=*/0, learning_rate);
  Remember(ticket, py::make_tuple(key_array, rows));
  return Future(std::move(ticket), py::none(), closing_);
}

py::object PythonClient::Lookup(const std::string& table, const py::handle& keys, const std::string& missing) {
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

FloatArray PythonClient::InitialRows(const std::string& table, const py::handle& keys) {
  const TableSpec* spec = ValueOrThrow(Connected()->FindTable(table));
  KeyArray key_array = ToKeys(keys);
  FloatArray rows({key_array.size(), static_cast<py::ssize_t>(spec->dim)});
  for (py::ssize_t i = 0; i < key_array.size(); ++i) {
    embedding::InitializeRow(*spec, key_array.data()[i],
                             {rows.mutable_data() + i * spec->dim, spec->dim});
  }
  return rows;
}

py::list PythonClient::Tables() {
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

py::dict PythonClient::ClusterStatusDict() {
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

py::list PythonClient::Stats() {
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

std::string PythonClient::Checkpoint(const std::string& dir, uint64_t step) {
  std::shared_ptr<ps::Client> client = Connected();
  const std::string absolute = std::filesystem::absolute(dir).lexically_normal().string();
  const Status written = WithoutGil([&] {
    Result<Manifest> manifest = ps::CheckpointServers(*client, absolute, step, timeout_);
    return manifest.ok() ? WriteManifest(absolute, *manifest) : manifest.status();
  });
  ThrowIfError(written.WithContext("checkpoint into " + absolute));
  return absolute;
}

uint64_t PythonClient::Restore(const std::string& dir) {
  std::shared_ptr<ps::Client> client = Connected();
  const std::string absolute = std::filesystem::absolute(dir).string();
  Result<Manifest> manifest = WithoutGil([&]() -> Result<Manifest> {
    ASSIGN_OR_RETURN(std::string found, FindCheckpoint(absolute));
    return ps::RestoreServers(*client, found, timeout_);
  });
  return ValueOrThrow(std::move(manifest)).step;
}

void PythonClient::Barrier(const std::string& name, uint32_t count, double timeout_s) {
  std::shared_ptr<ps::Client> client = Connected();
  const Millis timeout(static_cast<int64_t>(timeout_s * 1000));
  ThrowIfError(WithoutGil([&] { return client->scheduler().Barrier(name, count, timeout); }));
}

std::shared_ptr<ps::Client> PythonClient::Connected() const {
  if (!client_) ThrowStatus(closing_->AsError());
  return client_;
}

FloatArray PythonClient::CheckedRows(const py::handle& value, size_t n, uint32_t dim,
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

FloatArray PythonClient::CheckedOut(const py::object& out, size_t n, uint32_t dim) {
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

void PythonClient::Remember(const ps::Ticket& ticket, py::object buffers) {
  std::erase_if(in_flight_, [](const InFlight& entry) { return entry.ticket.ready(); });
  if (!ticket.ready()) in_flight_.push_back({ticket, std::move(buffers)});
}

}  // namespace ember::python
