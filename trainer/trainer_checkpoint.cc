// TrainerCheckpoint files: payload layout and checks.
//
// Payload: step u64, rank u32, trainers u32, data position (string), has_optimizer_state u8,
// adam_steps u64, then the weights and, with optimizer state, the first and second moments; each
// DenseWeights is per tower a layer count u32 and per layer in u32, out u32, weight floats, bias
// floats.
#include "trainer/trainer_checkpoint.h"

#include "common/checksummed_file.h"
#include "common/file_io.h"
#include "common/npy.h"
#include "common/checkpoint_layout.h"

namespace ember::trainer {
namespace {

constexpr char kMagic[] = "EMBTRNR1";
constexpr uint32_t kVersion = 1;
// No tower of a sane model has more layers; bounds what a damaged count could make us allocate.
constexpr uint32_t kMaxLayers = 1024;

void PutWeights(PayloadWriter& out, const DenseWeights& weights) {
  for (Tower tower : {Tower::kUser, Tower::kItem}) {
    const std::vector<LinearWeights>& layers = weights.tower(tower);
    out.Put<uint32_t>(static_cast<uint32_t>(layers.size()));
    for (const LinearWeights& layer : layers) {
      out.Put<uint32_t>(layer.in);
      out.Put<uint32_t>(layer.out);
      out.PutArray<float>(layer.weight);
      out.PutArray<float>(layer.bias);
    }
  }
}

bool GetWeights(PayloadReader& in, DenseWeights& weights) {
  for (Tower tower : {Tower::kUser, Tower::kItem}) {
    uint32_t count = 0;
    if (!in.Get(count) || count > kMaxLayers) return false;
    std::vector<LinearWeights>& layers = weights.tower(tower);
    layers.resize(count);
    for (LinearWeights& layer : layers) {
      if (!in.Get(layer.in) || !in.Get(layer.out)) return false;
      const uint64_t floats = uint64_t{layer.in} * layer.out;
      uint64_t bytes = 0;  // floats + out < 2^64, but the byte count may not be
      if (__builtin_mul_overflow(floats + layer.out, sizeof(float), &bytes) ||
          bytes > in.remaining()) {
        return false;
      }
      layer.weight.resize(floats);
      layer.bias.resize(layer.out);
      if (!in.GetArray<float>(layer.weight) || !in.GetArray<float>(layer.bias)) return false;
    }
  }
  return true;
}

}  // namespace

Status WriteTrainerCheckpoint(const std::string& path, const TrainerCheckpoint& checkpoint) {
  PayloadWriter out;
  out.Put<uint64_t>(checkpoint.step);
  out.Put<uint32_t>(checkpoint.rank);
  out.Put<uint32_t>(checkpoint.trainers);
  out.PutString(checkpoint.data_position);
  out.Put<uint8_t>(checkpoint.has_optimizer_state ? 1 : 0);
  out.Put<uint64_t>(checkpoint.has_optimizer_state ? checkpoint.dense.adam_steps : 0);
  PutWeights(out, checkpoint.dense.weights);
  if (checkpoint.has_optimizer_state) {
    PutWeights(out, checkpoint.dense.first_moment);
    PutWeights(out, checkpoint.dense.second_moment);
  }
  return WriteChecksummedFile(path, kMagic, kVersion, out.Take());
}

Result<TrainerCheckpoint> ReadTrainerCheckpoint(const std::string& path,
                                                const ModelConfig& model) {
  ASSIGN_OR_RETURN(TrainerCheckpoint checkpoint, ReadTrainerCheckpoint(path));
  const Status shaped = checkpoint.has_optimizer_state
                            ? CheckDenseStateShape(model, checkpoint.dense)
                            : CheckDenseWeightsShape(model, checkpoint.dense.weights);
  if (!shaped.ok()) {
    return InvalidArgument("trainer checkpoint '" + path + "' does not fit the model: " +
                           std::string(shaped.message()));
  }
  return checkpoint;
}

Result<TrainerCheckpoint> ReadTrainerCheckpoint(const std::string& path) {
  ASSIGN_OR_RETURN(std::string payload, ReadChecksummedFile(path, kMagic, kVersion));
  PayloadReader in(payload);
  TrainerCheckpoint checkpoint;
  uint8_t has_state = 0;
  bool ok = in.Get(checkpoint.step) && in.Get(checkpoint.rank) && in.Get(checkpoint.trainers) &&
            in.GetString(checkpoint.data_position) && in.Get(has_state) &&
            in.Get(checkpoint.dense.adam_steps) && GetWeights(in, checkpoint.dense.weights);
  checkpoint.has_optimizer_state = has_state != 0;
  if (ok && checkpoint.has_optimizer_state) {
    ok = GetWeights(in, checkpoint.dense.first_moment) &&
         GetWeights(in, checkpoint.dense.second_moment);
  }
  if (!ok || in.remaining() != 0) {
    return DataLoss("trainer checkpoint '" + path + "' does not hold what its header promises");
  }
  return checkpoint;
}

Status ExportDenseWeights(const std::string& checkpoint_dir, const std::string& out_dir) {
  ASSIGN_OR_RETURN(TrainerCheckpoint checkpoint,
                   ReadTrainerCheckpoint(TrainerFilePath(checkpoint_dir, 0)));
  const std::string dense_dir = out_dir + "/dense";
  RETURN_IF_ERROR(MakeDirectories(dense_dir));
  for (Tower tower : {Tower::kUser, Tower::kItem}) {
    const std::vector<LinearWeights>& layers = checkpoint.dense.weights.tower(tower);
    for (size_t l = 0; l < layers.size(); ++l) {
      const std::string base = dense_dir + "/" + (tower == Tower::kUser ? "user." : "item.") +
                               std::to_string(l);
      RETURN_IF_ERROR(WriteNpy(base + ".weight.npy", layers[l].weight,
                               {layers[l].out, layers[l].in}));
      RETURN_IF_ERROR(WriteNpy(base + ".bias.npy", layers[l].bias, {layers[l].out}));
    }
  }
  return Status::Ok();
}

}  // namespace ember::trainer
