// TrainerCheckpoint files: a round trip keeps every field; damage, truncation and a model of other
// shapes are refused with errors naming the file.
#include "trainer/trainer_checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/test_util.h"

namespace ember::trainer {
namespace {

ModelConfig Small() {
  ModelConfig model;
  model.embedding_dim = 4;
  model.user_slots = 2;
  model.item_slots = 1;
  model.hidden = {6};
  model.output_dim = 3;
  return model;
}

TrainerCheckpoint Sample() {
  TrainerCheckpoint checkpoint;
  checkpoint.step = 1234;
  checkpoint.rank = 1;
  checkpoint.trainers = 3;
  checkpoint.data_position = "interactions epoch 2 position 7 share 1/3 samples 10";
  checkpoint.dense.weights = InitDenseWeights(Small());
  ModelConfig other = Small();
  other.seed = 5;
  checkpoint.dense.first_moment = InitDenseWeights(other);
  other.seed = 6;
  checkpoint.dense.second_moment = InitDenseWeights(other);
  checkpoint.dense.adam_steps = 1234;
  checkpoint.has_optimizer_state = true;
  return checkpoint;
}

TEST(TrainerCheckpointFileTest, RoundTripKeepsEveryField) {
  ember::testing::TempDir dir;
  const std::string path = dir.path() + "/trainer-1.bin";
  for (bool with_state : {true, false}) {
    TrainerCheckpoint written = Sample();
    written.has_optimizer_state = with_state;
    ASSERT_TRUE(WriteTrainerCheckpoint(path, written).ok());
    auto read = ReadTrainerCheckpoint(path, Small());
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_EQ(read->step, 1234u);
    EXPECT_EQ(read->rank, 1u);
    EXPECT_EQ(read->trainers, 3u);
    EXPECT_EQ(read->data_position, written.data_position);
    EXPECT_EQ(read->has_optimizer_state, with_state);
    EXPECT_EQ(read->dense.weights.user[1].weight, written.dense.weights.user[1].weight);
    EXPECT_EQ(read->dense.weights.item[0].bias, written.dense.weights.item[0].bias);
    if (with_state) {
      EXPECT_EQ(read->dense.adam_steps, 1234u);
      EXPECT_EQ(read->dense.first_moment.item[1].weight, written.dense.first_moment.item[1].weight);
      EXPECT_EQ(read->dense.second_moment.user[0].bias, written.dense.second_moment.user[0].bias);
    } else {
      EXPECT_TRUE(read->dense.first_moment.user.empty());
    }
  }
}

TEST(TrainerCheckpointFileTest, DamageTruncationAndOtherShapesAreRefused) {
  ember::testing::TempDir dir;
  const std::string path = dir.path() + "/trainer-0.bin";
  ASSERT_TRUE(WriteTrainerCheckpoint(path, Sample()).ok());
  const auto size = std::filesystem::file_size(path);

  ModelConfig wider = Small();
  wider.hidden = {7};
  auto misfit = ReadTrainerCheckpoint(path, wider);
  EXPECT_EQ(misfit.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(misfit.status().ToString().find(path), std::string::npos);

  {
    std::fstream bytes(path, std::ios::in | std::ios::out | std::ios::binary);
    bytes.seekp(static_cast<std::streamoff>(size / 2));
    bytes.put('\x7f');
  }
  auto damaged = ReadTrainerCheckpoint(path, Small());
  EXPECT_EQ(damaged.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(damaged.status().ToString().find(path), std::string::npos);

  std::filesystem::resize_file(path, size - 9);
  EXPECT_EQ(ReadTrainerCheckpoint(path, Small()).status().code(), StatusCode::kDataLoss);
  std::filesystem::remove(path);
  EXPECT_EQ(ReadTrainerCheckpoint(path, Small()).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace ember::trainer
