// ember.InteractionData: a job config's interaction data (trainer/interaction_dataset.h) for
// Python: the leave-one-out split (and validation split) ember's trainer uses, the keys of every
// user and item, and ember's ranking evaluation of vectors a Python model encoded.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "local/cluster_config.h"
#include "python/binding.h"
#include "trainer/ranking_eval.h"
#include "trainer/ranking_metrics.h"

namespace ember::python {
namespace {

using trainer::InteractionDataset;

template <typename T>
py::array_t<T> ToArray(std::span<const T> values) {
  py::array_t<T> array(static_cast<py::ssize_t>(values.size()));
  std::copy(values.begin(), values.end(), array.mutable_data());
  return array;
}

py::dict FiguresDict(const trainer::RankingResult& result, uint32_t k, bool full) {
  const std::string at = "@" + std::to_string(k);
  py::dict out;
  out[py::str((full ? "recall" : "hit_rate") + at)] = result.hit_rate;
  out[py::str("ndcg" + at)] = result.ndcg;
  out[py::str((full ? "recall" : "hit_rate") + at + "_se")] = result.hit_rate_se;
  out[py::str("ndcg" + at + "_se")] = result.ndcg_se;
  out["cases"] = result.cases;
  out["tie_fraction"] = result.tie_fraction;
  out["items_recommended"] = result.items_recommended;
  auto part = [](const trainer::RankingFigures& figures) {
    py::dict dict;
    dict["hit_rate"] = figures.hit_rate;
    dict["ndcg"] = figures.ndcg;
    dict["cases"] = figures.cases;
    return dict;
  };
  out["warm"] = part(result.warm);
  out["cold"] = part(result.cold);
  return out;
}

bool FullProtocol(const std::string& protocol) {
  if (protocol == "sampled") return false;
  if (protocol == "full") return true;
  ThrowStatus(InvalidArgument("protocol: expected 'sampled' or 'full', got '" + protocol + "'"));
}

class InteractionData {
 public:
  // Loads the data of the config at `config_path` (its data section must be interactions);
  // relative data paths resolve against `data_root`, or the config's folder.
  InteractionData(const std::string& config_path, const std::string& data_root) {
    local::ClusterConfig config =
        ValueOrThrow(local::LoadClusterConfig(config_path, data_root, {}));
    if (config.data.kind != "interactions") {
      ThrowStatus(InvalidArgument(config_path + ": data.kind is '" + config.data.kind +
                                  "'; InteractionData needs interactions"));
    }
    dataset_ = ValueOrThrow(
        WithoutGil([&] { return trainer::LoadInteractions(config.data.interactions); }));
  }

  size_t num_users() const { return dataset_->num_users(); }
  size_t num_items() const { return dataset_->num_items(); }
  size_t num_train() const { return dataset_->num_train(); }
  uint32_t user_slots() const { return dataset_->user_slots(); }
  uint32_t item_slots() const { return dataset_->item_slots(); }

  // (users, items): the dense indices of every training interaction, as uint32 arrays.
  py::tuple TrainPairs() const {
    const auto pairs = dataset_->train();
    py::array_t<uint32_t> users(static_cast<py::ssize_t>(pairs.size()));
    py::array_t<uint32_t> items(static_cast<py::ssize_t>(pairs.size()));
    for (size_t i = 0; i < pairs.size(); ++i) {
      users.mutable_data()[i] = pairs[i].user;
      items.mutable_data()[i] = pairs[i].item;
    }
    return py::make_tuple(users, items);
  }

  // The keys of users (or items), checking that `slot` exists.
  const trainer::EntityKeys& SlotKeys(bool users, uint32_t slot) const {
    const trainer::EntityKeys& keys = users ? dataset_->users() : dataset_->items();
    if (slot >= keys.slots()) {
      ThrowStatus(InvalidArgument(std::string(users ? "user" : "item") + " slot " +
                                  std::to_string(slot) + " does not exist (" +
                                  std::to_string(keys.slots()) + " slots)"));
    }
    return keys;
  }

  // The key of every user (or item) in `slot`, as a uint64 array indexed by dense index.
  py::array_t<uint64_t> Keys(bool users, uint32_t slot) const {
    const trainer::EntityKeys& keys = SlotKeys(users, slot);
    const char* what = users ? "user" : "item";
    if (keys.multi_valued(slot)) {
      ThrowStatus(InvalidArgument(std::string(what) + " slot " + std::to_string(slot) +
                                  " is multi-valued; it has no single key per entity"));
    }
    const size_t n = users ? num_users() : num_items();
    py::array_t<uint64_t> out(static_cast<py::ssize_t>(n));
    for (size_t e = 0; e < n; ++e) out.mutable_data()[e] = keys.keys(e, slot)[0];
    return out;
  }

  // Every user's (or item's) keys in `slot` (any number: a multi-valued slot such as genres or a
  // user's history): (values, offsets), entity e's keys being values[offsets[e]:offsets[e+1]].
  py::tuple Bags(bool users, uint32_t slot) const {
    const trainer::EntityKeys& keys = SlotKeys(users, slot);
    const size_t n = users ? num_users() : num_items();
    py::array_t<int64_t> offsets(static_cast<py::ssize_t>(n + 1));
    offsets.mutable_data()[0] = 0;
    for (size_t e = 0; e < n; ++e) {
      offsets.mutable_data()[e + 1] =
          offsets.data()[e] + static_cast<int64_t>(keys.keys(e, slot).size());
    }
    py::array_t<uint64_t> values(static_cast<py::ssize_t>(offsets.data()[n]));
    for (size_t e = 0; e < n; ++e) {
      const std::span<const uint64_t> bag = keys.keys(e, slot);
      std::copy(bag.begin(), bag.end(), values.mutable_data() + offsets.data()[e]);
    }
    return py::make_tuple(values, offsets);
  }

  // With causal_history: each training pair's history keys (its user's latest distinct
  // training items before it), as (values, offsets) by training pair.
  py::tuple TrainHistories() const {
    if (!dataset_->history_slot() || !dataset_->options().causal_history) {
      ThrowStatus(FailedPrecondition(
          "train_histories: the data has no causal user history (data.interactions."
          "user_history and causal_history); without causal_history every sample of a user has "
          "the history user_bags(history_slot) gives"));
    }
    const size_t n = dataset_->train().size();
    py::array_t<int64_t> offsets(static_cast<py::ssize_t>(n + 1));
    std::vector<uint64_t> values;
    offsets.mutable_data()[0] = 0;
    for (size_t i = 0; i < n; ++i) {
      dataset_->AppendHistoryBefore(i, &values);
      offsets.mutable_data()[i + 1] = static_cast<int64_t>(values.size());
    }
    return py::make_tuple(ToArray(std::span<const uint64_t>(values)), offsets);
  }

  py::object HistorySlot() const {
    const std::optional<uint32_t> slot = dataset_->history_slot();
    return slot ? py::object(py::int_(*slot)) : py::object(py::none());
  }

  py::array_t<uint32_t> ItemTrainCounts() const { return ToArray(dataset_->item_train_counts()); }

  // Every evaluation case: (users, candidates), candidates[:, 0] being the held-out item.
  py::tuple Cases(const std::string& split) const {
    const std::vector<trainer::EvalCase>& cases = CasesOf(split);
    const size_t width = cases.empty() ? 0 : cases[0].candidate_items.size();
    py::array_t<uint32_t> users(static_cast<py::ssize_t>(cases.size()));
    py::array_t<uint32_t> candidates(
        {static_cast<py::ssize_t>(cases.size()), static_cast<py::ssize_t>(width)});
    for (size_t c = 0; c < cases.size(); ++c) {
      users.mutable_data()[c] = cases[c].user;
      std::copy(cases[c].candidate_items.begin(), cases[c].candidate_items.end(),
                candidates.mutable_data() + c * width);
    }
    return py::make_tuple(users, candidates);
  }

  py::dict Evaluate(const py::array_t<float, py::array::c_style | py::array::forcecast>& users,
                    const py::array_t<float, py::array::c_style | py::array::forcecast>& items,
                    uint32_t k, const std::string& protocol, const std::string& split) const {
    const bool full = FullProtocol(protocol);
    if (users.ndim() != 2 || items.ndim() != 2 || users.shape(1) != items.shape(1)) {
      ThrowStatus(
          InvalidArgument("user_vectors and item_vectors: expected two 2-D arrays with "
                          "the same number of columns"));
    }
    const std::vector<trainer::EvalCase>& cases = CasesOf(split);
    const uint32_t dim = static_cast<uint32_t>(users.shape(1));
    const trainer::RankingResult result = ValueOrThrow(WithoutGil([&] {
      return trainer::EvaluateEncoded(*dataset_, cases, {users.data(), size_t(users.size())},
                                      {items.data(), size_t(items.size())}, dim, k, full);
    }));
    return FiguresDict(result, k, full);
  }

  py::dict Popularity(uint32_t k, const std::string& protocol) const {
    const bool full = FullProtocol(protocol);
    return FiguresDict(trainer::EvaluatePopularity(*dataset_, k, full), k, full);
  }

  std::string Describe() const { return dataset_->Describe(); }
  size_t users_without_validation() const { return dataset_->users_without_validation(); }
  std::string user_id(uint32_t user) const {
    return dataset_->user_id(CheckedIndex(user, num_users(), "user"));
  }
  std::string item_id(uint32_t item) const {
    return dataset_->item_id(CheckedIndex(item, num_items(), "item"));
  }

 private:
  static uint32_t CheckedIndex(uint32_t index, size_t count, const char* what) {
    if (index >= count) {
      ThrowStatus(InvalidArgument(std::string(what) + " index " + std::to_string(index) +
                                  " is not below " + std::to_string(count)));
    }
    return index;
  }

  const std::vector<trainer::EvalCase>& CasesOf(const std::string& split) const {
    if (split == "test") return dataset_->eval_cases();
    if (split == "validation") {
      if (!dataset_->options().validation) {
        ThrowStatus(
            InvalidArgument("split 'validation': the config has no validation split "
                            "(data.interactions.validation: true)"));
      }
      return dataset_->validation_cases();
    }
    ThrowStatus(InvalidArgument("split: expected 'test' or 'validation', got '" + split + "'"));
  }

  std::shared_ptr<InteractionDataset> dataset_;
};

}  // namespace

void BindData(py::module_& module) {
  py::class_<InteractionData>(module, "InteractionData",
                              "A config's interaction data, split as ember's trainer splits it.")
      .def(py::init<const std::string&, const std::string&>(), py::arg("config_path"),
           py::arg("data_root") = "",
           "Loads and splits the interaction data of the config at `config_path` (relative data "
           "paths resolve against `data_root`, else the config's folder).")
      .def_property_readonly("num_users", &InteractionData::num_users, "Users (dense indices).")
      .def_property_readonly("num_items", &InteractionData::num_items, "Items (dense indices).")
      .def_property_readonly("num_train", &InteractionData::num_train,
                             "Training interactions (after the held-out ones).")
      .def_property_readonly("user_slots", &InteractionData::user_slots,
                             "The user tower's feature slots (user_keys(slot), or user_bags(slot) "
                             "for multi-valued ones).")
      .def_property_readonly("item_slots", &InteractionData::item_slots,
                             "The item tower's feature slots (item_keys(slot), or item_bags(slot) "
                             "for multi-valued ones).")
      .def_property_readonly("users_without_validation",
                             &InteractionData::users_without_validation,
                             "Evaluated users who keep their one training interaction (no validation item).")
      .def("train_pairs", &InteractionData::TrainPairs,
           "(users, items): dense indices of every training interaction (uint32 arrays).")
      .def(
          "user_keys",
          [](const InteractionData& data, uint32_t slot) { return data.Keys(true, slot); },
          py::arg("slot") = 0, "The key of every user in `slot` (uint64, by dense index).")
      .def(
          "item_keys",
          [](const InteractionData& data, uint32_t slot) { return data.Keys(false, slot); },
          py::arg("slot") = 0, "The key of every item in `slot` (uint64, by dense index).")
      .def(
          "user_bags",
          [](const InteractionData& data, uint32_t slot) { return data.Bags(true, slot); },
          py::arg("slot"),
          "Every user's keys in `slot`, any number each (a multi-valued slot: a history): "
          "(values, offsets), user u's keys being values[offsets[u]:offsets[u + 1]].")
      .def(
          "item_bags",
          [](const InteractionData& data, uint32_t slot) { return data.Bags(false, slot); },
          py::arg("slot"), "Every item's keys in `slot`, as user_bags.")
      .def_property_readonly("history_slot", &InteractionData::HistorySlot,
                             "The user slot of the training history (data.interactions."
                             "user_history), or None.")
      .def("train_histories", &InteractionData::TrainHistories,
           "With causal_history: each training pair's history keys (its user's latest distinct "
           "items before it), as (values, offsets) in train_pairs() order.")
      .def("item_train_counts", &InteractionData::ItemTrainCounts,
           "Training interactions per item (by dense index).")
      .def("cases", &InteractionData::Cases, py::arg("split") = "test",
           "(users, candidates): each case's user and candidate items, the held-out item first.")
      .def("evaluate", &InteractionData::Evaluate, py::arg("user_vectors"), py::arg("item_vectors"),
           py::arg("k") = 10, py::arg("protocol") = "sampled", py::arg("split") = "test",
           "Ranks each case's held-out item by the dot product of the user's and items' vectors "
           "(one row per user, one per item), ties pessimistic: HR@k and NDCG@k among sampled "
           "negatives, or Recall@k and NDCG@k over the full catalogue.")
      .def("popularity", &InteractionData::Popularity, py::arg("k") = 10,
           py::arg("protocol") = "sampled", "The most-popular baseline's figures.")
      .def("user_id", &InteractionData::user_id, py::arg("user"),
           "The raw id (as in the data file) of the user with dense index `user`.")
      .def("item_id", &InteractionData::item_id, py::arg("item"),
           "The raw id (as in the data file) of the item with dense index `item`.")
      .def("describe", &InteractionData::Describe,
           "A summary of the data and its split, as ember's trainer logs it.");
}

}  // namespace ember::python
