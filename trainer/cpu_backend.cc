// CPU backend: forward, backward and Adam for the two-tower model with OpenBLAS GEMMs.
//
// Per tower, with X0 the B x (slots*D) concatenation of each sample's slot rows:
//   Z_l = X_{l-1} W_l^T + b_l, X_l = relu(Z_l) for hidden layers; Y = Z_last; U = Y / |Y|.
// Logits S = U_user U_item^T / temperature; loss = mean_b (logsumexp(S_b) - S_bb).
// Backward: dS = (softmax(S) - I) / B, dU_user = dS U_item / t, dU_item = dS^T U_user / t,
// (the sampled losses score user b against its own 1 + N items only; see SampledLossAndGrads),
// through the normalisation dY = (dU - U (U.dU)) / |Y|, then the usual Linear/ReLU chain, and
// dX0 is scatter-added into each slot's unique rows.
#include "trainer/cpu_backend.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "common/check.h"

namespace ember::trainer {
namespace {

// Norms below this are treated as this, so a zero output does not divide by zero.
constexpr float kMinNorm = 1e-12f;

// Reusable per-tower buffers; sized for the largest batch seen so far.
struct TowerWorkspace {
  std::vector<float> input;                     // B x widths[0]
  std::vector<std::vector<float>> activations;  // per layer, B x widths[l+1]; last is pre-norm
  std::vector<float> norms;                     // B
  std::vector<float> normalized;                // B x output_dim
  std::vector<float> grad_normalized;           // B x output_dim
  std::vector<float> grad_ping, grad_pong;      // B x widest layer

  void Reserve(const std::vector<uint32_t>& widths, size_t batch) {
    const size_t widest = *std::max_element(widths.begin(), widths.end());
    input.resize(batch * widths[0]);
    activations.resize(widths.size() - 1);
    for (size_t l = 0; l + 1 < widths.size(); ++l) activations[l].resize(batch * widths[l + 1]);
    norms.resize(batch);
    normalized.resize(batch * widths.back());
    grad_normalized.resize(batch * widths.back());
    grad_ping.resize(batch * widest);
    grad_pong.resize(batch * widest);
  }
};

// Same shapes as `weights`, all zero.
DenseWeights ZerosLike(const DenseWeights& weights) {
  DenseWeights zeros = weights;
  for (Tower tower : {Tower::kUser, Tower::kItem}) {
    for (LinearWeights& layer : zeros.tower(tower)) {
      std::fill(layer.weight.begin(), layer.weight.end(), 0.0f);
      std::fill(layer.bias.begin(), layer.bias.end(), 0.0f);
    }
  }
  return zeros;
}

class CpuBackend final : public Backend {
 public:
  CpuBackend(const ModelConfig& config, DenseWeights initial)
      : config_(config), weights_(std::move(initial)) {
    widths_[0] = TowerWidths(config_, Tower::kUser);
    widths_[1] = TowerWidths(config_, Tower::kItem);
    ResetOptimizer();
  }

  std::string_view name() const override { return "cpu"; }

  Result<StepStats> TrainStep(uint32_t batch_size, const TowerInput& user,
                              const TowerInput& item) override {
    const uint32_t items = ItemSamples(config_, batch_size);
    const bool in_batch = config_.loss == LossKind::kInBatchSoftmax;
    if (!in_batch && !item.logit_offset.empty()) {
      return InvalidArgument("item logit_offset (the logQ correction) is for the in-batch "
                             "softmax only; model.loss is " + std::string(LossName(config_.loss)));
    }
    RETURN_IF_ERROR(CheckTowerInput(config_, Tower::kUser, batch_size, user, true));
    RETURN_IF_ERROR(CheckTowerInput(config_, Tower::kItem, items, item, true));
    const auto start = std::chrono::steady_clock::now();
    ReserveTower(Tower::kUser, batch_size);
    ReserveTower(Tower::kItem, items);
    ReserveLoss(batch_size, items);
    Forward(Tower::kUser, batch_size, user);
    Forward(Tower::kItem, items, item);
    StepStats stats;
    stats.loss = in_batch ? SoftmaxLossAndGrads(batch_size, items, item.logit_offset)
                          : SampledLossAndGrads(batch_size);
    Backward(Tower::kUser, batch_size, user);
    Backward(Tower::kItem, items, item);
    AdamUpdate();
    stats.device_ms =
        std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - start).count();
    return stats;
  }

  Status Encode(Tower tower, uint32_t batch_size, const TowerInput& input,
                std::span<float> out) override {
    RETURN_IF_ERROR(CheckEncodeInput(config_, tower, batch_size, input, out));
    const size_t expected = out.size();
    ReserveTower(tower, batch_size);
    Forward(tower, batch_size, input);
    const std::vector<float>& normalized = workspace(tower).normalized;
    std::copy(normalized.begin(), normalized.begin() + expected, out.begin());
    return Status::Ok();
  }

  DenseWeights GetWeights() override { return weights_; }
  Result<DenseWeights> DenseGradients() override { return grads_; }

  Status SetWeights(const DenseWeights& weights) override {
    RETURN_IF_ERROR(CheckDenseWeightsShape(config_, weights));
    weights_ = weights;
    ResetOptimizer();
    return Status::Ok();
  }

  Result<DenseState> GetState() override {
    return DenseState{weights_, first_moment_, second_moment_, step_};
  }

  Status SetState(const DenseState& state) override {
    RETURN_IF_ERROR(CheckDenseStateShape(config_, state));
    weights_ = state.weights;
    first_moment_ = state.first_moment;
    second_moment_ = state.second_moment;
    step_ = state.adam_steps;
    return Status::Ok();
  }

 private:
  const std::vector<uint32_t>& widths(Tower tower) const {
    return widths_[static_cast<int>(tower)];
  }
  TowerWorkspace& workspace(Tower tower) { return workspaces_[static_cast<int>(tower)]; }

  void ResetOptimizer() {
    grads_ = ZerosLike(weights_);
    first_moment_ = ZerosLike(weights_);
    second_moment_ = ZerosLike(weights_);
    step_ = 0;
  }

  // The tower's buffers, sized for a batch of `batch_size`.
  void ReserveTower(Tower tower, uint32_t batch_size) {
    uint32_t& reserved = tower_batch_[static_cast<int>(tower)];
    if (batch_size <= reserved) return;
    reserved = batch_size;
    workspace(tower).Reserve(widths(tower), batch_size);
  }

  // The logits (B x B in-batch, B x (B + N) with shared negatives, B x (1 + N) sampled) and the
  // bias-gradient ones (one per sample of the larger tower), needed only for training.
  void ReserveLoss(uint32_t batch_size, uint32_t item_samples) {
    if (batch_size <= loss_batch_) return;
    loss_batch_ = batch_size;
    const bool in_batch = config_.loss == LossKind::kInBatchSoftmax;
    logits_.resize(size_t{batch_size} * (in_batch ? item_samples : 1 + config_.negatives));
    ones_.assign(std::max(batch_size, item_samples), 1.0f);
  }

  // Fills the tower's workspace up to `normalized` (and `norms`).
  void Forward(Tower tower, uint32_t batch_size, const TowerInput& input) {
    TowerWorkspace& ws = workspace(tower);
    const std::vector<uint32_t>& width = widths(tower);
    const std::vector<LinearWeights>& layers = weights_.tower(tower);
    const int batch = static_cast<int>(batch_size);
    const size_t dim = config_.embedding_dim;

    // Gather each sample's slot rows (the mean of a multi-valued slot's) into its input row.
    const size_t input_width = width[0];
    for (size_t s = 0; s < input.slots.size(); ++s) {
      const SlotInput& slot = input.slots[s];
      for (size_t b = 0; b < batch_size; ++b) {
        float* target = &ws.input[b * input_width + s * dim];
        if (slot.offsets.empty()) {
          std::memcpy(target, &slot.unique_rows[slot.inverse[b] * dim], dim * sizeof(float));
          continue;
        }
        std::fill(target, target + dim, 0.0f);
        const uint32_t begin = slot.offsets[b], end = slot.offsets[b + 1];
        for (uint32_t j = begin; j < end; ++j) {
          const float* row = &slot.unique_rows[slot.inverse[j] * dim];
          for (size_t d = 0; d < dim; ++d) target[d] += row[d];
        }
        if (end > begin) {
          const float inverse_count = 1.0f / static_cast<float>(end - begin);
          for (size_t d = 0; d < dim; ++d) target[d] *= inverse_count;
        }
      }
    }

    const float* x = ws.input.data();
    for (size_t l = 0; l < layers.size(); ++l) {
      const LinearWeights& layer = layers[l];
      float* z = ws.activations[l].data();
      for (size_t b = 0; b < batch_size; ++b) {
        std::memcpy(z + b * layer.out, layer.bias.data(), layer.out * sizeof(float));
      }
      // Z (B x out) += X (B x in) * W^T (in x out)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, layer.out, layer.in, 1.0f, x,
                  layer.in, layer.weight.data(), layer.in, 1.0f, z, layer.out);
      if (l + 1 < layers.size()) {
        const size_t n = size_t{batch_size} * layer.out;
        for (size_t i = 0; i < n; ++i) z[i] = std::max(z[i], 0.0f);
      }
      x = z;
    }

    const size_t out_dim = config_.output_dim;
    for (size_t b = 0; b < batch_size; ++b) {
      const float* y = x + b * out_dim;
      float* u = &ws.normalized[b * out_dim];
      float squares = 0;
      for (size_t j = 0; j < out_dim; ++j) squares += y[j] * y[j];
      const float norm = std::max(std::sqrt(squares), kMinNorm);
      ws.norms[b] = norm;
      const float inverse_norm = 1.0f / norm;
      for (size_t j = 0; j < out_dim; ++j) u[j] = y[j] * inverse_norm;
    }
  }

  // From both towers' `normalized`: returns the mean loss and fills each tower's
  // grad_normalized. User b's logits are its scores against all `items` item samples (the
  // batch's positives, then any shared negatives), its positive in column b.
  float SoftmaxLossAndGrads(uint32_t batch_size, uint32_t items,
                            std::span<const float> logit_offset) {
    const int batch = static_cast<int>(batch_size);
    const int columns = static_cast<int>(items);
    const int out_dim = static_cast<int>(config_.output_dim);
    const float inverse_temperature = 1.0f / config_.temperature;
    const float* user = workspace(Tower::kUser).normalized.data();
    const float* item = workspace(Tower::kItem).normalized.data();
    float* logits = logits_.data();

    // S (B x items) = U_user U_item^T / t
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, columns, out_dim,
                inverse_temperature, user, out_dim, item, out_dim, 0.0f, logits, columns);
    if (!logit_offset.empty()) {
      for (size_t b = 0; b < batch_size; ++b) {
        float* row = logits + b * items;
        for (size_t j = 0; j < items; ++j) row[j] -= logit_offset[j];
      }
    }

    // Row softmax, turned in place into dS = (softmax - onehot(b)) / B.
    double loss_sum = 0;
    const float inverse_batch = 1.0f / static_cast<float>(batch_size);
    for (size_t b = 0; b < batch_size; ++b) {
      float* row = logits + b * items;
      const float row_max = *std::max_element(row, row + items);
      const float positive = row[b];
      float sum = 0;
      for (size_t j = 0; j < items; ++j) {
        row[j] = std::exp(row[j] - row_max);
        sum += row[j];
      }
      loss_sum += static_cast<double>(std::log(sum) + row_max - positive);
      const float scale = inverse_batch / sum;
      for (size_t j = 0; j < items; ++j) row[j] *= scale;
      row[b] -= inverse_batch;
    }

    // dU_user = dS U_item / t;  dU_item = dS^T U_user / t
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, out_dim, columns,
                inverse_temperature, logits, columns, item, out_dim, 0.0f,
                workspace(Tower::kUser).grad_normalized.data(), out_dim);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, columns, out_dim, batch,
                inverse_temperature, logits, columns, user, out_dim, 0.0f,
                workspace(Tower::kItem).grad_normalized.data(), out_dim);
    return static_cast<float>(loss_sum / batch_size);
  }

  // The sampled losses, from both towers' `normalized`: user b's logits are s_c = U_user[b] .
  // V_c / t over its candidates c = 0 (its positive, item sample b) and 1..N (its negatives,
  // item samples B + b N + c - 1). Returns the mean loss over users and fills each tower's
  // grad_normalized (d loss / d s_c is ds below, already divided by B).
  float SampledLossAndGrads(uint32_t batch_size) {
    const size_t out_dim = config_.output_dim;
    const uint32_t negatives = config_.negatives;
    const uint32_t candidates = 1 + negatives;
    const float inverse_temperature = 1.0f / config_.temperature;
    const float inverse_batch = 1.0f / static_cast<float>(batch_size);
    const float* user = workspace(Tower::kUser).normalized.data();
    const float* item = workspace(Tower::kItem).normalized.data();
    float* grad_user = workspace(Tower::kUser).grad_normalized.data();
    float* grad_item = workspace(Tower::kItem).grad_normalized.data();
    std::fill(grad_item, grad_item + size_t{batch_size} * candidates * out_dim, 0.0f);
    auto sample_of = [&](uint32_t b, uint32_t c) -> size_t {
      return c == 0 ? b : batch_size + size_t{b} * negatives + (c - 1);
    };
    // log(1 + e^x) and the logistic function, stable for large |x|.
    auto softplus = [](double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); };
    auto sigmoid = [](float x) { return 1.0f / (1.0f + std::exp(-x)); };

    double loss_sum = 0;
    float* scores = logits_.data();
    for (uint32_t b = 0; b < batch_size; ++b) {
      const float* u = user + size_t{b} * out_dim;
      float* ds = scores + size_t{b} * candidates;
      for (uint32_t c = 0; c < candidates; ++c) {
        const float* v = item + sample_of(b, c) * out_dim;
        float dot = 0;
        for (size_t j = 0; j < out_dim; ++j) dot += u[j] * v[j];
        ds[c] = dot * inverse_temperature;
      }
      // Turn the scores into d loss / d score, in place.
      switch (config_.loss) {
        case LossKind::kSampledSoftmax: {
          const float top = *std::max_element(ds, ds + candidates);
          const float positive = ds[0];
          float sum = 0;
          for (uint32_t c = 0; c < candidates; ++c) sum += (ds[c] = std::exp(ds[c] - top));
          loss_sum += std::log(sum) + top - positive;
          for (uint32_t c = 0; c < candidates; ++c) ds[c] *= inverse_batch / sum;
          ds[0] -= inverse_batch;
          break;
        }
        case LossKind::kBce:
          loss_sum += softplus(-ds[0]);
          ds[0] = (sigmoid(ds[0]) - 1.0f) * inverse_batch;
          for (uint32_t c = 1; c < candidates; ++c) {
            loss_sum += softplus(ds[c]);
            ds[c] = sigmoid(ds[c]) * inverse_batch;
          }
          break;
        case LossKind::kBpr: {
          const float positive = ds[0];
          const float pair_weight = inverse_batch / static_cast<float>(negatives);
          ds[0] = 0;
          for (uint32_t c = 1; c < candidates; ++c) {
            const float margin = positive - ds[c];
            loss_sum += softplus(-margin) / negatives;
            const float slope = sigmoid(-margin) * pair_weight;  // -d loss / d margin
            ds[0] -= slope;
            ds[c] = slope;
          }
          break;
        }
        case LossKind::kInBatchSoftmax:
          break;
      }
      // dU_user[b] = sum_c ds_c V_c / t;  dV_c += ds_c U_user[b] / t.
      float* du = grad_user + size_t{b} * out_dim;
      std::fill(du, du + out_dim, 0.0f);
      for (uint32_t c = 0; c < candidates; ++c) {
        const float weight = ds[c] * inverse_temperature;
        const size_t sample = sample_of(b, c);
        const float* v = item + sample * out_dim;
        float* dv = grad_item + sample * out_dim;
        for (size_t j = 0; j < out_dim; ++j) {
          du[j] += weight * v[j];
          dv[j] += weight * u[j];
        }
      }
    }
    return static_cast<float>(loss_sum / batch_size);
  }

  // From the tower's grad_normalized: fills grads_ for the tower's layers and every slot's
  // unique_grads.
  void Backward(Tower tower, uint32_t batch_size, const TowerInput& input) {
    TowerWorkspace& ws = workspace(tower);
    const std::vector<LinearWeights>& layers = weights_.tower(tower);
    std::vector<LinearWeights>& layer_grads = grads_.tower(tower);
    const int batch = static_cast<int>(batch_size);

    // Through the L2 normalisation: dY = (dU - U (U . dU)) / |Y|.
    const size_t out_dim = config_.output_dim;
    float* grad = ws.grad_ping.data();
    float* spare = ws.grad_pong.data();
    for (size_t b = 0; b < batch_size; ++b) {
      const float* u = &ws.normalized[b * out_dim];
      const float* du = &ws.grad_normalized[b * out_dim];
      float projection = 0;
      for (size_t j = 0; j < out_dim; ++j) projection += u[j] * du[j];
      const float inverse_norm = 1.0f / ws.norms[b];
      for (size_t j = 0; j < out_dim; ++j) {
        grad[b * out_dim + j] = (du[j] - u[j] * projection) * inverse_norm;
      }
    }

    for (size_t l = layers.size(); l-- > 0;) {
      const LinearWeights& layer = layers[l];
      LinearWeights& layer_grad = layer_grads[l];
      const float* x = l == 0 ? ws.input.data() : ws.activations[l - 1].data();
      // dW (out x in) = dZ^T (out x B) X (B x in);  db = dZ^T 1
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, layer.out, layer.in, batch, 1.0f, grad,
                  layer.out, x, layer.in, 0.0f, layer_grad.weight.data(), layer.in);
      cblas_sgemv(CblasRowMajor, CblasTrans, batch, layer.out, 1.0f, grad, layer.out, ones_.data(),
                  1, 0.0f, layer_grad.bias.data(), 1);
      // dX (B x in) = dZ (B x out) W (out x in), then through the previous layer's ReLU.
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, layer.in, layer.out, 1.0f, grad,
                  layer.out, layer.weight.data(), layer.in, 0.0f, spare, layer.in);
      if (l > 0) {
        const size_t n = size_t{batch_size} * layer.in;
        for (size_t i = 0; i < n; ++i) {
          if (!(x[i] > 0.0f)) spare[i] = 0.0f;
        }
      }
      std::swap(grad, spare);
    }

    // Scatter-add dX0 into each slot's unique-row gradients (a multi-valued slot's rows each get
    // their sample's share of the mean).
    const size_t dim = config_.embedding_dim;
    const size_t input_width = widths(tower)[0];
    for (size_t s = 0; s < input.slots.size(); ++s) {
      const SlotInput& slot = input.slots[s];
      std::fill(slot.unique_grads.begin(), slot.unique_grads.end(), 0.0f);
      for (size_t b = 0; b < batch_size; ++b) {
        const float* source = grad + b * input_width + s * dim;
        const uint32_t begin = slot.offsets.empty() ? static_cast<uint32_t>(b) : slot.offsets[b];
        const uint32_t end = slot.offsets.empty() ? begin + 1 : slot.offsets[b + 1];
        const float share = end > begin ? 1.0f / static_cast<float>(end - begin) : 0.0f;
        for (uint32_t j = begin; j < end; ++j) {
          float* target = &slot.unique_grads[slot.inverse[j] * dim];
          for (size_t d = 0; d < dim; ++d) target[d] += source[d] * share;
        }
      }
    }
  }

  void AdamUpdate() {
    ++step_;
    const double bias1 = 1.0 - std::pow(static_cast<double>(config_.beta1), step_);
    const double bias2 = 1.0 - std::pow(static_cast<double>(config_.beta2), step_);
    const float step_size = static_cast<float>(config_.learning_rate / bias1);
    const float inverse_sqrt_bias2 = static_cast<float>(1.0 / std::sqrt(bias2));
    const float beta1 = config_.beta1, beta2 = config_.beta2, epsilon = config_.epsilon;
    auto update = [&](std::vector<float>& w, const std::vector<float>& g, std::vector<float>& m,
                      std::vector<float>& v) {
      for (size_t i = 0; i < w.size(); ++i) {
        m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
        v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
        w[i] -= step_size * m[i] / (std::sqrt(v[i]) * inverse_sqrt_bias2 + epsilon);
      }
    };
    for (Tower tower : {Tower::kUser, Tower::kItem}) {
      std::vector<LinearWeights>& layers = weights_.tower(tower);
      for (size_t l = 0; l < layers.size(); ++l) {
        const LinearWeights& g = grads_.tower(tower)[l];
        LinearWeights& m = first_moment_.tower(tower)[l];
        LinearWeights& v = second_moment_.tower(tower)[l];
        update(layers[l].weight, g.weight, m.weight, v.weight);
        update(layers[l].bias, g.bias, m.bias, v.bias);
      }
    }
  }

  const ModelConfig config_;
  std::vector<uint32_t> widths_[2];  // per tower, TowerWidths
  DenseWeights weights_, grads_, first_moment_, second_moment_;
  uint64_t step_ = 0;  // Adam steps taken since the weights were set

  uint32_t tower_batch_[2] = {0, 0};  // per tower, the batch its workspace is sized for
  uint32_t loss_batch_ = 0;           // the batch logits_ and ones_ are sized for
  TowerWorkspace workspaces_[2];
  std::vector<float> logits_;  // B x B, then its gradient
  std::vector<float> ones_;    // B ones, for bias gradients
};

}  // namespace

std::unique_ptr<Backend> MakeCpuBackend(const ModelConfig& config, DenseWeights initial) {
  const Status valid = ValidateModelConfig(config);
  EMBER_CHECK(valid.ok(), valid.ToString());
  const Status shaped = CheckDenseWeightsShape(config, initial);
  EMBER_CHECK(shaped.ok(), shaped.ToString());
  return std::make_unique<CpuBackend>(config, std::move(initial));
}

}  // namespace ember::trainer
