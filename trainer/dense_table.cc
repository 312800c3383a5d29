// DenseTable implementation.
#include "trainer/dense_table.h"

#include <algorithm>

namespace ember::trainer {
namespace {

// Calls fn(values) for every weight and bias array in DenseTable's order.
template <typename Weights, typename Fn>
void ForEachArray(Weights& weights, Fn&& fn) {
  for (Tower tower : {Tower::kUser, Tower::kItem}) {
    for (auto& layer : weights.tower(tower)) {
      fn(layer.weight);
      fn(layer.bias);
    }
  }
}

}  // namespace

size_t DenseParameterCount(const DenseWeights& weights) {
  size_t count = 0;
  ForEachArray(weights, [&](const std::vector<float>& values) { count += values.size(); });
  return count;
}

void FlattenDense(const DenseWeights& weights, std::span<float> out) {
  size_t at = 0;
  ForEachArray(weights, [&](const std::vector<float>& values) {
    std::copy(values.begin(), values.end(), out.begin() + at);
    at += values.size();
  });
  std::fill(out.begin() + at, out.end(), 0.0f);
}

void UnflattenDense(std::span<const float> flat, DenseWeights* shaped) {
  size_t at = 0;
  ForEachArray(*shaped, [&](std::vector<float>& values) {
    std::copy(flat.begin() + at, flat.begin() + at + values.size(), values.begin());
    at += values.size();
  });
}

TableSpec DenseTableSpec(const ModelConfig& model) {
  TableSpec spec;
  spec.name = kDenseTableName;
  spec.dim = kDenseChunk;
  spec.initializer.kind = InitializerKind::kZeros;
  spec.optimizer.kind = OptimizerKind::kAdam;
  spec.optimizer.learning_rate = model.learning_rate;
  spec.optimizer.beta1 = model.beta1;
  spec.optimizer.beta2 = model.beta2;
  spec.optimizer.epsilon = model.epsilon;
  return spec;
}

DenseTable::DenseTable(const ModelConfig& model) : shaped_(InitDenseWeights(model)) {
  const size_t count = DenseParameterCount(shaped_);
  keys_.resize((count + kDenseChunk - 1) / kDenseChunk);
  for (size_t i = 0; i < keys_.size(); ++i) keys_[i] = i;
  initial_.resize(buffer_floats());
  FlattenDense(shaped_, initial_);
}

void DenseTable::StartPull(ps::Client& client, std::span<float> rows,
                           std::vector<ps::Ticket>* tickets) const {
  tickets->push_back(client.Pull(kDenseTableName, keys_, rows));
}

Status DenseTable::Load(std::span<const float> rows, Backend& backend) {
  thread_local std::vector<float> weights;
  weights.resize(initial_.size());
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = initial_[i] + rows[i];
  UnflattenDense(weights, &shaped_);
  return backend.SetWeights(shaped_);
}

Status DenseTable::StartPush(ps::Client& client, Backend& backend, std::span<float> grads,
                             uint64_t clock, bool deferred,
                             std::vector<ps::Ticket>* tickets) const {
  ASSIGN_OR_RETURN(DenseWeights gradients, backend.DenseGradients());
  if (DenseParameterCount(gradients) != DenseParameterCount(shaped_)) {
    return Internal("the backend's dense gradients do not have the model's shape");
  }
  FlattenDense(gradients, grads);
  tickets->push_back(client.Push(kDenseTableName, keys_, grads, clock, deferred));
  return Status::Ok();
}

}  // namespace ember::trainer
