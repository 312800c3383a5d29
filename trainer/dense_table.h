// DenseTable: the dense tower weights shared by all trainers through the servers.
//
// The weights are flattened (user tower then item tower, each layer's weight then bias) and cut
// into fixed chunks of kDenseChunk floats; chunk i is row i of the table `kDenseTableName`. The
// table holds the offset from the initial weights (InitDenseWeights, the same on every trainer),
// so it starts as zeros and needs no special initialiser; its optimizer is the model's Adam, run
// on the servers. Each step a trainer pulls the rows, loads w0 + offset into its backend, and
// pushes the backend's dense gradients with the same clock and mode as its embedding rows, so
// bsp, asp and ssp treat dense and sparse parameters alike.
//
// Thread-safety: one trainer thread; the buffers passed in are the caller's.
#pragma once

#include <span>
#include <vector>

#include "common/table_spec.h"
#include "ps/client/client.h"
#include "trainer/backend.h"
#include "trainer/model_config.h"

namespace ember::trainer {

inline constexpr char kDenseTableName[] = "dense";
inline constexpr uint32_t kDenseChunk = 1024;  // floats per row: ~180 rows for tt-bench

// The table spec every role adds when the dense weights live on the servers.
TableSpec DenseTableSpec(const ModelConfig& model);

class DenseTable {
 public:
  explicit DenseTable(const ModelConfig& model);

  // Floats of a row buffer (rows x kDenseChunk, padded past the last weight).
  size_t buffer_floats() const { return keys_.size() * size_t{kDenseChunk}; }
  // Starts pulling the current offsets into `rows` (buffer_floats() long, kept alive until done).
  void StartPull(ps::Client& client, std::span<float> rows, std::vector<ps::Ticket>* tickets) const;
  // Loads w0 + rows into the backend.
  Status Load(std::span<const float> rows, Backend& backend);
  // Copies the backend's dense gradients into `grads` (buffer_floats() long) and starts pushing
  // them for `clock`.
  Status StartPush(ps::Client& client, Backend& backend, std::span<float> grads, uint64_t clock,
                   bool deferred, std::vector<ps::Ticket>* tickets) const;

 private:
  std::vector<uint64_t> keys_;   // 0 .. rows-1
  std::vector<float> initial_;   // flattened InitDenseWeights
  DenseWeights shaped_;          // scratch with the model's shapes
};

// Flattened weights in DenseTable's order; Unflatten fills `shaped` (already shaped) from it.
void FlattenDense(const DenseWeights& weights, std::span<float> out);
void UnflattenDense(std::span<const float> flat, DenseWeights* shaped);
size_t DenseParameterCount(const DenseWeights& weights);

}  // namespace ember::trainer
