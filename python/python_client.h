// ember.Client and ember.Future: a thin binding of ps::Client (ps/client/client.h), declared
// here for the files that implement it: python_client.cc (the data plane and the calls to the
// cluster) and python_client_sync.cc (the steps of a synchronised run); client_binding.cc binds
// them.
//
// Pulled rows land in the numpy array the caller gets (or passes as `out`) with no extra copy;
// keys are read in place when they are a contiguous uint64 or int64 array (an int64 key is its
// unsigned bit pattern, so that torch's int64 tensors carry every uint64 key).
// The client reads and writes those buffers from its I/O thread until the operation finishes, so
// every operation keeps its arrays alive until then, also when the caller dropped its Future
// (e.g. after Ctrl-C): the client holds them in `in_flight_` and lets go once the ticket is done.
#pragma once

#include <pybind11/numpy.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ps/client/client.h"
#include "python/binding.h"
#include "trainer/step_sync.h"

namespace ember::python {

using FloatArray = py::array_t<float, py::array::c_style>;
using KeyArray = py::array_t<uint64_t, py::array::c_style>;

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
  py::object Result(std::optional<double> timeout);
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
               double register_timeout_s, double heartbeat_s, uint32_t max_keys_per_message,
               uint32_t rank, bool wire_fp16, bool read_only);

  ~PythonClient() { Close(/*leave=*/true, ""); }

  // Leaves the scheduler (nobody waits for this trainer any more, unless `leave` is false: the
  // cluster is known to be gone) and disconnects; what is still in flight fails with Aborted.
  // Later calls fail with "the client is closed", and `reason` (if given) after it. Safe to call
  // more than once.
  void Close(bool leave, const std::string& reason);

  py::object Pull(const std::string& table, const py::handle& keys, const py::object& out);
  void Push(const std::string& table, const py::handle& keys, const py::handle& gradients,
            float learning_rate);

  Future PullAsync(const std::string& table, const py::handle& keys, const py::object& out);

  // One pull of several tables, one request per server for all of them (Client::Pull of
  // TablePulls): `requests` is a sequence of (table, keys) pairs, `outs` None or one array (or
  // None) per pair. The result is the list of their rows, in order.
  Future PullTablesAsync(const py::sequence& requests, const py::object& outs);

  Future PushAsync(const std::string& table, const py::handle& keys, const py::handle& gradients,
                   float learning_rate);

  // The rows of `keys` as the servers hold them, changing nothing there (Client::Lookup): a key
  // without a row gets its initial row (missing "initial"), or zeros and a False found flag
  // (missing "flag", which returns (rows, found)).
  py::object Lookup(const std::string& table, const py::handle& keys, const std::string& missing);

  // The rows `keys` start with in `table` (the deterministic initialiser), computed here.
  FloatArray InitialRows(const std::string& table, const py::handle& keys);

  py::list Tables();

  py::dict ClusterStatusDict();

  py::list Stats();

  // Every server writes its partitions into `dir`, then the manifest makes it a checkpoint of
  // the servers alone (restorable into any server count). Consistent when no push is in flight.
  std::string Checkpoint(const std::string& dir, uint64_t step);

  // Loads a checkpoint (or the newest under `dir`) into the servers; returns its step.
  uint64_t Restore(const std::string& dir);

  void Barrier(const std::string& name, uint32_t count, double timeout_s);

  // ---- The steps of a synchronised run (python_client_sync.cc) ----
  // The run's synchronisation as the scheduler said at registration: mode ("asp", "bsp",
  // "ssp"), staleness, combine ("mean", "sum"), trainers, clock_timeout (seconds).
  py::dict SyncDict();
  // Steps this trainer completed; its pushes carry the clock of the step under way (clock + 1),
  // deferred to the clock's apply in bsp.
  uint64_t clock() const { return clock_.load(std::memory_order_acquire); }
  // Ends the step under way (its pushes must be acknowledged): reports it to the scheduler (in
  // bsp and ssp this waits for the others), and in bsp has the servers apply it. Returns the
  // checkpoint cut due after this step ({"clock", "dir", "file"}: this trainer writes its own
  // state into "file", then calls take_cut) or None.
  py::object EndStep();
  // After writing its file for the due cut (or failing to: `error` says why): meets the other
  // trainers at the cut; the coordinator has the servers write their part and the manifest.
  // Whether the cut was written whole (a failed one is logged, and training goes on).
  bool TakeCut(const std::string& error);

  uint32_t trainer_id() { return Connected()->trainer_id(); }
  uint32_t rank() const { return rank_; }
  uint64_t requests_resent() { return Connected()->requests_resent(); }
  double timeout() const { return timeout_.count() / 1000.0; }

 private:
  // The client, held by the caller for the length of its call (Close may run meanwhile).
  std::shared_ptr<ps::Client> Connected() const;

  // `array` as a C-contiguous float32 array of n rows of `dim` (a copy only when it is strided).
  static FloatArray CheckedRows(const py::handle& value, size_t n, uint32_t dim,
                                const std::string& what);

  // `out` as the array a pull fills in place: C-contiguous float32 of n rows of `dim`, writable
  // (a numpy array, or what shares its memory through __array__: a CPU torch tensor). A strided
  // view is refused rather than filled through a copy the caller would never see.
  static FloatArray CheckedOut(const py::object& out, size_t n, uint32_t dim);

  // Keeps `buffers` alive until `ticket` finished; forgets those of finished operations.
  void Remember(const ps::Ticket& ticket, py::object buffers);

  struct InFlight {
    ps::Ticket ticket;
    py::object buffers;
  };
  std::shared_ptr<ps::Client> client_;
  std::vector<InFlight> in_flight_;  // touched with the GIL held
  std::shared_ptr<Closing> closing_ = std::make_shared<Closing>();
  Millis timeout_{30'000};
  uint32_t rank_ = 0;                 // this trainer's rank in a run of several
  std::atomic<uint64_t> clock_{0};    // steps completed
  // Uses *client_: a call holds both (Close may run meanwhile); touched with the GIL held.
  std::shared_ptr<trainer::StepSync> step_sync_;
};

}  // namespace ember::python
