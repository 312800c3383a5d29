// DenseWeights initialisation and shape checks.
#include "trainer/dense_weights.h"

#include "trainer/dense_state.h"

#include <cmath>
#include <string>

namespace ember::trainer {
namespace {

// SplitMix64: a small, fully specified generator, so initial weights are identical on every
// platform and standard library.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [-bound, bound).
  float Symmetric(float bound) {
    const float unit = static_cast<float>(Next() >> 40) * 0x1.0p-24f;  // [0, 1)
    return (2.0f * unit - 1.0f) * bound;
  }

 private:
  uint64_t state_;
};

LinearWeights InitLinear(uint32_t in, uint32_t out, uint64_t stream_seed) {
  LinearWeights layer;
  layer.in = in;
  layer.out = out;
  layer.weight.resize(size_t{in} * out);
  layer.bias.resize(out);
  SplitMix64 rng(stream_seed);
  const float bound = 1.0f / std::sqrt(static_cast<float>(in));
  for (float& w : layer.weight) w = rng.Symmetric(bound);
  for (float& b : layer.bias) b = rng.Symmetric(bound);
  return layer;
}

std::vector<LinearWeights> InitTower(const ModelConfig& config, Tower tower) {
  const std::vector<uint32_t> widths = TowerWidths(config, tower);
  std::vector<LinearWeights> layers;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    // One independent stream per (seed, tower, layer).
    SplitMix64 mix(config.seed * 0x100000001B3ull + static_cast<uint64_t>(tower) * 1024 + l);
    layers.push_back(InitLinear(widths[l], widths[l + 1], mix.Next()));
  }
  return layers;
}

const char* TowerName(Tower tower) { return tower == Tower::kUser ? "user" : "item"; }

}  // namespace

std::vector<uint32_t> TowerWidths(const ModelConfig& config, Tower tower) {
  const uint32_t slots = tower == Tower::kUser ? config.user_slots : config.item_slots;
  std::vector<uint32_t> widths = {slots * config.embedding_dim};
  widths.insert(widths.end(), config.hidden.begin(), config.hidden.end());
  widths.push_back(config.output_dim);
  return widths;
}

DenseWeights InitDenseWeights(const ModelConfig& config) {
  DenseWeights weights;
  weights.user = InitTower(config, Tower::kUser);
  weights.item = InitTower(config, Tower::kItem);
  return weights;
}

Status CheckDenseWeightsShape(const ModelConfig& config, const DenseWeights& weights) {
  for (Tower tower : {Tower::kUser, Tower::kItem}) {
    const std::vector<uint32_t> widths = TowerWidths(config, tower);
    const std::vector<LinearWeights>& layers = weights.tower(tower);
    const std::string name = std::string(TowerName(tower)) + " tower";
    if (layers.size() + 1 != widths.size()) {
      return InvalidArgument(name + " has " + std::to_string(layers.size()) +
                             " layers but the model has " + std::to_string(widths.size() - 1));
    }
    for (size_t l = 0; l < layers.size(); ++l) {
      const LinearWeights& layer = layers[l];
      const std::string where = name + " layer " + std::to_string(l);
      if (layer.in != widths[l] || layer.out != widths[l + 1]) {
        return InvalidArgument(where + " is " + std::to_string(layer.in) + " -> " +
                               std::to_string(layer.out) + " but the model needs " +
                               std::to_string(widths[l]) + " -> " + std::to_string(widths[l + 1]));
      }
      if (layer.weight.size() != size_t{layer.in} * layer.out || layer.bias.size() != layer.out) {
        return InvalidArgument(where + " has " + std::to_string(layer.weight.size()) +
                               " weights and " + std::to_string(layer.bias.size()) +
                               " biases; expected " + std::to_string(size_t{layer.in} * layer.out) +
                               " and " + std::to_string(layer.out));
      }
    }
  }
  return Status::Ok();
}

Status CheckDenseStateShape(const ModelConfig& config, const DenseState& state) {
  RETURN_IF_ERROR(CheckDenseWeightsShape(config, state.weights).WithContext("dense weights"));
  RETURN_IF_ERROR(
      CheckDenseWeightsShape(config, state.first_moment).WithContext("Adam first moment"));
  return CheckDenseWeightsShape(config, state.second_moment).WithContext("Adam second moment");
}

}  // namespace ember::trainer
