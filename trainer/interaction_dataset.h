// InteractionDataset: user-item interactions from a delimited file (e.g. MovieLens u.data), split
// leave-one-out for HR@k / NDCG@k evaluation, with optional categorical side features.
//
// Protocol: rows with rating >= min_rating are positives (every row when there is no rating
// column). For each evaluated user (one with >= 2 positives), the latest positive (largest
// timestamp; ties, or no timestamp column, go to the later line) is held out as the test item and
// every copy of that user-item pair leaves the training set. Its candidates are the test item plus
// `negatives` distinct catalogue items (every item in the file) the user never interacted with at
// any rating, drawn with a per-user seed so they are identical across runs.
//
// Keys: slot 0 of each tower is HashName(id). Side-feature slot f is
// HashCombine(HashName(feature name), HashName(values)), where the feature name joins the labels
// of its columns with '+' and the values are its columns' fields joined by '\x1f' (so a list of
// genre flag columns becomes one key per genre combination). A multi-valued feature (one column
// with a separator, e.g. "Action|Comedy") has a key per value instead, HashCombine(HashName(column
// label), HashName(value)), and its slot averages their rows (an empty field is one empty value).
// Ids absent from the side file get a per-feature "missing" key.
//
// With `user_history` N > 0 the user tower's last slot is multi-valued: the user's latest N
// distinct training items (HistoryKey(item): keys of their own, not the item tower's), or
// EmptyHistoryKey() for a user with none. A training sample leaves its own positive out of it
// (InteractionSource), so the model never sees the answer among its inputs; evaluation uses the
// whole training history, which never holds a held-out item. With `causal_history` a training
// sample's history is instead its user's latest N distinct training items from before it (by
// timestamp, then line), as a held-out item's is: the model learns to predict what comes next.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "trainer/delimited_reader.h"
#include "trainer/entity_keys.h"

namespace ember::trainer {

// One side feature, one slot: its key combines the values of all its columns; or, with a
// separator, its one column holds several values and each is a key of its own.
struct SideFeature {
  std::vector<ColumnRef> columns;
  std::string separator;  // non-empty: multi-valued (exactly one column)
};

struct SideFeatureFile {
  std::string path;
  DelimitedOptions format;
  ColumnRef id{0};
  std::vector<SideFeature> features;
};

struct InteractionOptions {
  std::string path;
  DelimitedOptions format;
  ColumnRef user{0};
  ColumnRef item{1};
  ColumnRef rating{2};     // unset (index -1, no name): every row is a positive
  ColumnRef timestamp{3};  // unset: the later line is the later interaction
  double min_rating = 0;   // positives: rating >= min_rating
  std::optional<SideFeatureFile> user_features;
  std::optional<SideFeatureFile> item_features;
  uint32_t negatives = 99;       // sampled negatives per evaluated user
  uint64_t seed = 42;            // negatives, the evaluated-user subset and epoch shuffles
  uint32_t max_eval_users = 0;   // 0: every user with >= 2 positives; otherwise a seeded subset
                                 // (users not evaluated keep all their positives for training)
  // Each evaluated user's latest training interaction (other than its test item) becomes its
  // validation item, ranked against negatives of its own; the test split stays as it is. Users
  // left with no training interaction then keep theirs (users_without_validation()).
  bool validation = false;
  // > 0: a user slot of each user's latest `user_history` distinct training items (see above).
  uint32_t user_history = 0;
  // With user_history: a training sample's history holds only what its user did before it.
  bool causal_history = false;
};

// One evaluated user: score every candidate and rank the test item (candidate 0) among them.
// Their keys are the dataset's (users() and items()).
struct EvalCase {
  std::string user_id;
  uint32_t user = 0;                                       // dense user index
  std::string test_item_id;
  std::vector<std::string> candidate_ids;    // [candidate]; 0 = test item
  std::vector<uint32_t> candidate_items;     // [candidate]: dense item indices
};

// A training positive, as dense indices (see user_id() / item_id()).
struct TrainPair {
  uint32_t user = 0;
  uint32_t item = 0;
};

class InteractionDataset {
 public:
  static Result<std::shared_ptr<InteractionDataset>> Load(const InteractionOptions& options);

  uint32_t user_slots() const { return user_slots_; }
  uint32_t item_slots() const { return item_slots_; }

  size_t num_users() const { return user_ids_.size(); }  // every user in the file
  size_t num_items() const { return item_ids_.size(); }  // the catalogue: every item in the file
  size_t num_train() const { return train_.size(); }

  std::span<const TrainPair> train() const { return train_; }
  // Every user's and item's keys per slot (one for slot 0, the id, and for single-valued
  // features; one or more for multi-valued ones).
  const EntityKeys& users() const { return user_keys_; }
  const EntityKeys& items() const { return item_keys_; }
  // The user slot of the training history, when options().user_history > 0.
  std::optional<uint32_t> history_slot() const;
  // HistoryKey(item_id(item)), computed once per item (empty without a history slot).
  uint64_t history_key(uint32_t item) const { return history_keys_[item]; }
  // With options().causal_history: appends the history keys of training pair `train_index` (its
  // user's latest distinct training items before it, oldest first, never its own item), or
  // EmptyHistoryKey() when there are none.
  void AppendHistoryBefore(size_t train_index, std::vector<uint64_t>* keys) const;
  static uint64_t HistoryKey(std::string_view item_id);
  static uint64_t EmptyHistoryKey();
  const std::string& user_id(uint32_t user) const { return user_ids_[user]; }
  const std::string& item_id(uint32_t item) const { return item_ids_[item]; }
  std::optional<uint32_t> FindItem(std::string_view item_id) const;

  const std::vector<EvalCase>& eval_cases() const { return eval_cases_; }
  // With options.validation: a case per evaluated user that has a validation item (candidate 0).
  const std::vector<EvalCase>& validation_cases() const { return validation_cases_; }
  // Evaluated users without a validation item: too few interactions to spare one.
  size_t users_without_validation() const { return users_without_validation_; }

  // Training positives per dense item, and by id (0 for an unknown id): the popularity baseline.
  std::span<const uint32_t> item_train_counts() const { return item_train_counts_; }
  uint32_t TrainCount(std::string_view item_id) const;

  const InteractionOptions& options() const { return options_; }
  // e.g. "interactions u.data: 943 users, 1682 items, 99057 train, 943 eval users, 2+2 slots"
  std::string Describe() const;

 private:
  InteractionDataset() = default;

  Status ReadInteractions();
  void Split();
  // For each evaluated user, its validation item: the latest positive of another item than its
  // test item, when one more item is left for training (kNone otherwise, and for other users).
  std::vector<uint32_t> SplitValidation(std::span<const uint32_t> test_item_of_user);
  // Negatives for each of `users` (none it interacted with), drawn from rng seeds of `stream`
  // and the user's id.
  Result<std::vector<std::vector<uint32_t>>> SampleNegatives(std::span<const uint32_t> users,
                                                             uint64_t stream) const;
  // history_ from the training positives (those not held out for test or validation).
  // `train_positive` maps each training pair to its positive.
  void BuildHistories(std::span<const uint32_t> test_item_of_user,
                      std::span<const uint32_t> validation_item_of_user,
                      std::span<const size_t> train_positive);
  Status BuildKeys();
  // A case per user: its held-out item first, then its negatives.
  std::vector<EvalCase> BuildCases(std::span<const uint32_t> users,
                                   std::span<const uint32_t> held_out,
                                   const std::vector<std::vector<uint32_t>>& negatives) const;

  InteractionOptions options_;
  uint32_t user_slots_ = 1;
  uint32_t item_slots_ = 1;

  std::vector<std::string> user_ids_;
  std::vector<std::string> item_ids_;
  std::unordered_map<std::string, uint32_t> user_index_;
  std::unordered_map<std::string, uint32_t> item_index_;

  struct Positive {
    uint32_t user;
    uint32_t item;
    double timestamp;
    uint64_t line_order;  // position among the file's data rows
  };
  std::vector<Positive> positives_;
  std::vector<std::vector<uint32_t>> interacted_;  // [user]: sorted distinct items, any rating
  std::vector<std::vector<uint32_t>> history_;  // [user]: latest distinct training items, oldest first
  std::vector<uint64_t> history_keys_;          // [item]: HistoryKey of its id
  // With causal_history: [user]: every training item, oldest first; [training pair]: how many of
  // its user's training items came before it.
  std::vector<std::vector<uint32_t>> sequence_;
  std::vector<uint32_t> sequence_position_;

  std::vector<uint32_t> eval_users_;      // ascending
  std::vector<uint32_t> test_item_;       // [eval case]
  std::vector<uint32_t> validation_users_;  // ascending, a subset of eval_users_
  std::vector<uint32_t> validation_item_;   // [validation case]
  size_t users_without_validation_ = 0;

  std::vector<TrainPair> train_;
  std::vector<uint32_t> item_train_counts_;
  EntityKeys user_keys_;
  EntityKeys item_keys_;
  std::vector<EvalCase> eval_cases_;
  std::vector<EvalCase> validation_cases_;
  size_t users_without_features_ = 0;  // users absent from the user side file
  size_t items_without_features_ = 0;
};

}  // namespace ember::trainer
