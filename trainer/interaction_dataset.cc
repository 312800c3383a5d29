// InteractionDataset: loading, leave-one-out split, negative sampling and key building.
#include "trainer/interaction_dataset.h"

#include <algorithm>
#include <unordered_set>
#include <charconv>
#include <filesystem>
#include <limits>
#include <random>

#include "common/hash.h"
#include "trainer/zipf.h"

namespace ember::trainer {
namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
constexpr size_t kNoPositive = std::numeric_limits<size_t>::max();

std::string_view TrimSpaces(std::string_view text) {
  const size_t first = text.find_first_not_of(' ');
  if (first == std::string_view::npos) return {};
  const size_t last = text.find_last_not_of(' ');
  return text.substr(first, last - first + 1);
}

Result<double> ParseNumber(std::string_view field, size_t column, const DelimitedReader& reader,
                           std::string_view what) {
  const std::string_view text = TrimSpaces(field);
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    return InvalidArgument(reader.path() + " line " + std::to_string(reader.line_number()) +
                           ", column " + std::to_string(column) + ": " + std::string(what) +
                           " '" + std::string(field) +
                           "' is not a number");
  }
  return value;
}

uint32_t Intern(std::string_view id, std::unordered_map<std::string, uint32_t>* index,
                std::vector<std::string>* ids) {
  auto [it, inserted] = index->try_emplace(std::string(id), static_cast<uint32_t>(ids->size()));
  if (inserted) ids->push_back(it->first);
  return it->second;
}

Result<std::optional<size_t>> ResolveOptionalColumn(const DelimitedReader& reader,
                                                    const ColumnRef& column,
                                                    std::string_view what) {
  if (!column.is_set()) return std::optional<size_t>();
  ASSIGN_OR_RETURN(const size_t index,
                   ResolveColumn(reader.path(), reader.header(), column, what));
  return std::optional<size_t>(index);
}

// One side feature: the columns whose values form its key (or the multi-valued column and its
// separator), and its name's hash.
struct ResolvedFeature {
  std::vector<size_t> columns;
  std::string separator;
  uint64_t name_hash = 0;
};

// The feature's keys in `row`: one, or one per value of a multi-valued field.
std::vector<uint64_t> FeatureKeys(const ResolvedFeature& feature,
                                  const std::vector<std::string>& row) {
  if (feature.separator.empty()) {
    std::string value;
    for (size_t i = 0; i < feature.columns.size(); ++i) {
      if (i > 0) value += '\x1f';
      value += TrimSpaces(row[feature.columns[i]]);
    }
    return {HashCombine(feature.name_hash, HashName(value))};
  }
  std::vector<uint64_t> keys;
  const std::string_view field = row[feature.columns[0]];
  size_t start = 0;
  while (start <= field.size()) {
    const size_t end = std::min(field.find(feature.separator, start), field.size());
    const std::string_view value = TrimSpaces(field.substr(start, end - start));
    if (!value.empty()) keys.push_back(HashCombine(feature.name_hash, HashName(value)));
    start = end + feature.separator.size();
  }
  if (keys.empty()) keys.push_back(HashCombine(feature.name_hash, HashName("")));
  return keys;
}

uint64_t MissingFeatureKey(const ResolvedFeature& feature) {
  static constexpr uint64_t kMissingTag = HashName("ember: no side-feature row");
  return HashCombine(feature.name_hash ^ kMissingTag, 0);
}

// Fills keys[entity * slots + 1 + f] from the side file; returns how many entities it lacks.
Result<size_t> JoinSideFeatures(const SideFeatureFile& side, std::string_view tower,
                                const std::vector<std::string>& ids, uint32_t slots,
                                std::vector<std::vector<uint64_t>>* keys) {
  const std::string what = std::string(tower) + "_features";
  ASSIGN_OR_RETURN(DelimitedTable table, ReadDelimited(side.path, side.format));
  ASSIGN_OR_RETURN(const size_t id_column, ResolveColumn(table, side.id, what + " id column"));
  std::vector<ResolvedFeature> features;
  for (size_t f = 0; f < side.features.size(); ++f) {
    const std::vector<ColumnRef>& refs = side.features[f].columns;
    if (refs.empty()) {
      return InvalidArgument(what + ".features[" + std::to_string(f) + "]: lists no columns");
    }
    ResolvedFeature feature;
    feature.separator = side.features[f].separator;
    if (!feature.separator.empty() && refs.size() != 1) {
      return InvalidArgument(what + ".features[" + std::to_string(f) +
                             "]: a multi-valued feature (with a separator) has one column");
    }
    std::string name;
    for (const ColumnRef& ref : refs) {
      ASSIGN_OR_RETURN(const size_t column,
                       ResolveColumn(table, ref, what + " feature " + std::to_string(f) +
                                                     " column"));
      feature.columns.push_back(column);
      if (!name.empty()) name += '+';
      name += ref.Label();
    }
    feature.name_hash = HashName(name);
    features.push_back(std::move(feature));
  }

  std::unordered_map<std::string, size_t> row_of_id;
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const std::string id(TrimSpaces(table.rows[r][id_column]));
    auto [it, inserted] = row_of_id.try_emplace(id, r);
    if (!inserted) {
      return InvalidArgument(side.path + " line " + std::to_string(table.line_numbers[r]) +
                             ": duplicate id '" + id + "' (first on line " +
                             std::to_string(table.line_numbers[it->second]) + ")");
    }
  }

  size_t missing = 0;
  for (size_t e = 0; e < ids.size(); ++e) {
    const auto it = row_of_id.find(ids[e]);
    if (it == row_of_id.end()) ++missing;
    for (size_t f = 0; f < features.size(); ++f) {
      (*keys)[e * slots + 1 + f] =
          it == row_of_id.end() ? std::vector<uint64_t>{MissingFeatureKey(features[f])}
                                : FeatureKeys(features[f], table.rows[it->second]);
    }
  }
  return missing;
}

}  // namespace

Result<std::shared_ptr<InteractionDataset>> InteractionDataset::Load(
    const InteractionOptions& options) {
  std::shared_ptr<InteractionDataset> data(new InteractionDataset());
  data->options_ = options;
  RETURN_IF_ERROR(data->ReadInteractions());
  data->Split();
  // The test cases' negatives come from the seed alone, with or without validation.
  ASSIGN_OR_RETURN(const auto test_negatives, data->SampleNegatives(data->eval_users_, 0));
  ASSIGN_OR_RETURN(const auto validation_negatives,
                   data->SampleNegatives(data->validation_users_, HashName("validation")));
  RETURN_IF_ERROR(data->BuildKeys());
  data->eval_cases_ = data->BuildCases(data->eval_users_, data->test_item_, test_negatives);
  data->validation_cases_ =
      data->BuildCases(data->validation_users_, data->validation_item_, validation_negatives);
  return data;
}

Status InteractionDataset::ReadInteractions() {
  ASSIGN_OR_RETURN(std::unique_ptr<DelimitedReader> reader,
                   DelimitedReader::Open(options_.path, options_.format));
  ASSIGN_OR_RETURN(const size_t user_column,
                   ResolveColumn(options_.path, reader->header(), options_.user, "user column"));
  ASSIGN_OR_RETURN(const size_t item_column,
                   ResolveColumn(options_.path, reader->header(), options_.item, "item column"));
  ASSIGN_OR_RETURN(const std::optional<size_t> rating_column,
                   ResolveOptionalColumn(*reader, options_.rating, "rating column"));
  ASSIGN_OR_RETURN(const std::optional<size_t> timestamp_column,
                   ResolveOptionalColumn(*reader, options_.timestamp, "timestamp column"));

  std::vector<TrainPair> all_pairs;
  uint64_t line_order = 0;
  while (true) {
    ASSIGN_OR_RETURN(const bool more, reader->Next());
    if (!more) break;
    ASSIGN_OR_RETURN(const std::string_view user_field, reader->Field(user_column, "user"));
    ASSIGN_OR_RETURN(const std::string_view item_field, reader->Field(item_column, "item"));
    const std::string_view user_id = TrimSpaces(user_field);
    const std::string_view item_id = TrimSpaces(item_field);
    if (user_id.empty() || item_id.empty()) {
      return InvalidArgument(options_.path + " line " + std::to_string(reader->line_number()) +
                             ", column " +
                             std::to_string(user_id.empty() ? user_column : item_column) +
                             ": empty " + (user_id.empty() ? "user" : "item") + " id");
    }
    const uint32_t user = Intern(user_id, &user_index_, &user_ids_);
    const uint32_t item = Intern(item_id, &item_index_, &item_ids_);
    bool positive = true;
    if (rating_column) {
      ASSIGN_OR_RETURN(const std::string_view field, reader->Field(*rating_column, "rating"));
      ASSIGN_OR_RETURN(const double rating, ParseNumber(field, *rating_column, *reader, "rating"));
      positive = rating >= options_.min_rating;
    }
    double timestamp = 0;
    if (timestamp_column) {
      ASSIGN_OR_RETURN(const std::string_view field,
                       reader->Field(*timestamp_column, "timestamp"));
      ASSIGN_OR_RETURN(timestamp, ParseNumber(field, *timestamp_column, *reader, "timestamp"));
    }
    all_pairs.push_back(TrainPair{user, item});
    if (positive) positives_.push_back(Positive{user, item, timestamp, line_order});
    ++line_order;
  }
  if (positives_.empty()) {
    return InvalidArgument(options_.path + ": no positive interactions (" +
                           std::to_string(line_order) + " rows, min_rating " +
                           std::to_string(options_.min_rating) + ")");
  }

  std::sort(all_pairs.begin(), all_pairs.end(), [](const TrainPair& a, const TrainPair& b) {
    return a.user != b.user ? a.user < b.user : a.item < b.item;
  });
  interacted_.assign(user_ids_.size(), {});
  for (size_t i = 0; i < all_pairs.size(); ++i) {
    if (i > 0 && all_pairs[i].user == all_pairs[i - 1].user &&
        all_pairs[i].item == all_pairs[i - 1].item) {
      continue;
    }
    interacted_[all_pairs[i].user].push_back(all_pairs[i].item);
  }
  return Status::Ok();
}

void InteractionDataset::Split() {
  const size_t users = user_ids_.size();
  std::vector<uint32_t> positive_count(users, 0);
  std::vector<size_t> latest(users, 0);
  for (size_t p = 0; p < positives_.size(); ++p) {
    const Positive& positive = positives_[p];
    // Positives come in file order, so >= sends ties to the later line.
    if (positive_count[positive.user] == 0 ||
        positive.timestamp >= positives_[latest[positive.user]].timestamp) {
      latest[positive.user] = p;
    }
    ++positive_count[positive.user];
  }

  for (uint32_t u = 0; u < users; ++u) {
    if (positive_count[u] >= 2) eval_users_.push_back(u);
  }
  if (options_.max_eval_users > 0 && eval_users_.size() > options_.max_eval_users) {
    std::mt19937_64 rng(HashCombine(options_.seed, HashName("evaluated users")));
    for (size_t i = 0; i < options_.max_eval_users; ++i) {
      std::swap(eval_users_[i], eval_users_[i + UniformBelow(rng, eval_users_.size() - i)]);
    }
    eval_users_.resize(options_.max_eval_users);
    std::sort(eval_users_.begin(), eval_users_.end());
  }

  std::vector<uint32_t> test_item_of_user(users, kNone);
  for (const uint32_t u : eval_users_) {
    const uint32_t item = positives_[latest[u]].item;
    test_item_of_user[u] = item;
    test_item_.push_back(item);
  }

  // Validation: the latest positive of another item than the test item, if one more item is
  // left for training.
  const std::vector<uint32_t> validation_item_of_user =
      options_.validation ? SplitValidation(test_item_of_user)
                          : std::vector<uint32_t>(users, kNone);

  item_train_counts_.assign(item_ids_.size(), 0);
  std::vector<size_t> train_positive;  // [training pair]: its positive
  for (size_t p = 0; p < positives_.size(); ++p) {
    const Positive& positive = positives_[p];
    if (test_item_of_user[positive.user] == positive.item ||
        validation_item_of_user[positive.user] == positive.item) {
      continue;
    }
    train_.push_back(TrainPair{positive.user, positive.item});
    train_positive.push_back(p);
    ++item_train_counts_[positive.item];
  }
  if (options_.user_history > 0) {
    BuildHistories(test_item_of_user, validation_item_of_user, train_positive);
  }
  positives_.clear();
  positives_.shrink_to_fit();
}

std::vector<uint32_t> InteractionDataset::SplitValidation(
    std::span<const uint32_t> test_item_of_user) {
  const size_t users = user_ids_.size();
  std::vector<uint32_t> validation_item_of_user(users, kNone);
  std::vector<size_t> latest_other(users, kNoPositive);
  for (size_t p = 0; p < positives_.size(); ++p) {
    const Positive& positive = positives_[p];
    if (test_item_of_user[positive.user] == kNone ||
        positive.item == test_item_of_user[positive.user]) {
      continue;
    }
    size_t& other = latest_other[positive.user];
    if (other == kNoPositive || positive.timestamp >= positives_[other].timestamp) other = p;
  }
  std::vector<uint8_t> trains_on_more(users, 0);
  for (const Positive& positive : positives_) {
    const size_t other = latest_other[positive.user];
    if (other != kNoPositive && positive.item != test_item_of_user[positive.user] &&
        positive.item != positives_[other].item) {
      trains_on_more[positive.user] = 1;
    }
  }
  for (const uint32_t u : eval_users_) {
    if (!trains_on_more[u]) {
      ++users_without_validation_;
      continue;
    }
    validation_item_of_user[u] = positives_[latest_other[u]].item;
    validation_users_.push_back(u);
    validation_item_.push_back(validation_item_of_user[u]);
  }
  return validation_item_of_user;
}

void InteractionDataset::BuildHistories(std::span<const uint32_t> test_item_of_user,
                                        std::span<const uint32_t> validation_item_of_user,
                                        std::span<const size_t> train_positive) {
  std::vector<size_t> order;  // training positives, by user, then oldest first
  for (size_t p = 0; p < positives_.size(); ++p) {
    const Positive& positive = positives_[p];
    if (test_item_of_user[positive.user] != positive.item &&
        validation_item_of_user[positive.user] != positive.item) {
      order.push_back(p);
    }
  }
  std::sort(order.begin(), order.end(), [this](size_t a, size_t b) {
    const Positive& x = positives_[a];
    const Positive& y = positives_[b];
    if (x.user != y.user) return x.user < y.user;
    if (x.timestamp != y.timestamp) return x.timestamp < y.timestamp;
    return x.line_order < y.line_order;
  });
  history_.assign(user_ids_.size(), {});
  std::vector<uint8_t> taken(item_ids_.size(), 0);
  for (size_t end = order.size(); end > 0;) {
    const uint32_t user = positives_[order[end - 1]].user;
    std::vector<uint32_t>& history = history_[user];
    size_t begin = end;
    for (; begin > 0 && positives_[order[begin - 1]].user == user; --begin) {
      const uint32_t item = positives_[order[begin - 1]].item;
      if (history.size() < options_.user_history && !taken[item]) {
        taken[item] = 1;
        history.push_back(item);
      }
    }
    for (const uint32_t item : history) taken[item] = 0;
    std::reverse(history.begin(), history.end());
    end = begin;
  }
  if (!options_.causal_history) return;
  std::vector<uint32_t> position_of_positive(positives_.size(), 0);
  sequence_.assign(user_ids_.size(), {});
  for (const size_t p : order) {
    std::vector<uint32_t>& sequence = sequence_[positives_[p].user];
    position_of_positive[p] = static_cast<uint32_t>(sequence.size());
    sequence.push_back(positives_[p].item);
  }
  sequence_position_.resize(train_positive.size());
  for (size_t t = 0; t < train_positive.size(); ++t) {
    sequence_position_[t] = position_of_positive[train_positive[t]];
  }
}

void InteractionDataset::AppendHistoryBefore(size_t train_index,
                                             std::vector<uint64_t>* keys) const {
  const TrainPair& pair = train_[train_index];
  const std::vector<uint32_t>& sequence = sequence_[pair.user];
  const auto first = static_cast<std::ptrdiff_t>(keys->size());
  // Distinct items: a scan of those taken while they are few, a set of them beyond that.
  constexpr size_t kScannedKeys = 64;
  std::unordered_set<uint64_t> taken_keys;
  size_t taken = 0;
  for (size_t i = sequence_position_[train_index]; i > 0 && taken < options_.user_history; --i) {
    const uint32_t item = sequence[i - 1];
    if (item == pair.item) continue;
    const uint64_t key = history_keys_[item];
    if (taken < kScannedKeys) {
      if (std::find(keys->begin() + first, keys->end(), key) != keys->end()) continue;
    } else {
      if (taken_keys.empty()) taken_keys.insert(keys->begin() + first, keys->end());
      if (!taken_keys.insert(key).second) continue;
    }
    keys->push_back(key);
    ++taken;
  }
  if (taken == 0) {
    keys->push_back(EmptyHistoryKey());
    return;
  }
  std::reverse(keys->begin() + first, keys->end());
}

std::optional<uint32_t> InteractionDataset::history_slot() const {
  if (options_.user_history == 0) return std::nullopt;
  return user_slots_ - 1;
}

uint64_t InteractionDataset::HistoryKey(std::string_view item_id) {
  return HashCombine(HashName("user history"), HashName(item_id));
}

uint64_t InteractionDataset::EmptyHistoryKey() {
  return HashCombine(HashName("user history"), HashName(""));  // no item id is empty
}

Result<std::vector<std::vector<uint32_t>>> InteractionDataset::SampleNegatives(
    std::span<const uint32_t> users, uint64_t stream) const {
  const uint32_t wanted = options_.negatives;
  const size_t catalogue = item_ids_.size();
  std::vector<uint8_t> taken(catalogue, 0);  // interacted with, or already chosen
  std::vector<uint32_t> pool;
  std::vector<std::vector<uint32_t>> negatives(users.size());
  for (size_t c = 0; c < users.size(); ++c) {
    const uint32_t user = users[c];
    const std::vector<uint32_t>& seen = interacted_[user];
    const size_t available = catalogue - seen.size();
    if (available < wanted) {
      return InvalidArgument(options_.path + ": user '" + user_ids_[user] +
                             "' has interacted with " + std::to_string(seen.size()) + " of the " +
                             std::to_string(catalogue) + " items, leaving fewer than " +
                             std::to_string(wanted) + " negatives to sample");
    }
    for (const uint32_t item : seen) taken[item] = 1;
    const uint64_t seed = stream == 0 ? options_.seed : HashCombine(options_.seed, stream);
    std::mt19937_64 rng(HashCombine(seed, HashName(user_ids_[user])));
    std::vector<uint32_t>& chosen = negatives[c];
    chosen.clear();
    if (available <= 4 * static_cast<size_t>(wanted)) {
      // Dense case: a partial shuffle of the items the user never saw.
      pool.clear();
      for (uint32_t item = 0; item < catalogue; ++item) {
        if (!taken[item]) pool.push_back(item);
      }
      for (uint32_t i = 0; i < wanted; ++i) {
        std::swap(pool[i], pool[i + UniformBelow(rng, pool.size() - i)]);
        chosen.push_back(pool[i]);
      }
    } else {
      // Sparse case: rejection sampling; at least 3/4 of the draws succeed.
      while (chosen.size() < wanted) {
        const uint32_t item = static_cast<uint32_t>(UniformBelow(rng, catalogue));
        if (taken[item]) continue;
        taken[item] = 1;
        chosen.push_back(item);
      }
    }
    for (const uint32_t item : seen) taken[item] = 0;
    for (const uint32_t item : chosen) taken[item] = 0;
  }
  return negatives;
}

Status InteractionDataset::BuildKeys() {
  if (options_.user_features) {
    user_slots_ += static_cast<uint32_t>(options_.user_features->features.size());
  }
  if (options_.item_features) {
    item_slots_ += static_cast<uint32_t>(options_.item_features->features.size());
  }
  if (options_.user_history > 0) ++user_slots_;
  // Slot 0 is the id; then one slot per side feature; then the user's history.
  auto build = [](const std::vector<std::string>& ids, uint32_t slots,
                  const std::optional<SideFeatureFile>& side, std::string_view tower,
                  size_t* without_features, std::vector<std::vector<uint64_t>>* keys,
                  std::vector<bool>* multi_valued) -> Status {
    keys->assign(ids.size() * slots, {});
    for (size_t e = 0; e < ids.size(); ++e) (*keys)[e * slots] = {HashName(ids[e])};
    multi_valued->assign(slots, false);
    if (side) {
      ASSIGN_OR_RETURN(*without_features, JoinSideFeatures(*side, tower, ids, slots, keys));
      for (size_t f = 0; f < side->features.size(); ++f) {
        (*multi_valued)[1 + f] = !side->features[f].separator.empty();
      }
    }
    return Status::Ok();
  };
  std::vector<std::vector<uint64_t>> keys;
  std::vector<bool> multi_valued;
  RETURN_IF_ERROR(build(user_ids_, user_slots_, options_.user_features, "user",
                        &users_without_features_, &keys, &multi_valued));
  if (const std::optional<uint32_t> slot = history_slot()) {
    multi_valued[*slot] = true;
    history_keys_.reserve(item_ids_.size());
    for (const std::string& item_id : item_ids_) history_keys_.push_back(HistoryKey(item_id));
    for (size_t u = 0; u < user_ids_.size(); ++u) {
      std::vector<uint64_t>& history = keys[u * user_slots_ + *slot];
      for (const uint32_t item : history_[u]) history.push_back(history_keys_[item]);
      if (history.empty()) history.push_back(EmptyHistoryKey());
    }
  }
  user_keys_ = EntityKeys(keys, std::move(multi_valued));
  RETURN_IF_ERROR(build(item_ids_, item_slots_, options_.item_features, "item",
                        &items_without_features_, &keys, &multi_valued));
  item_keys_ = EntityKeys(keys, std::move(multi_valued));
  return Status::Ok();
}

std::vector<EvalCase> InteractionDataset::BuildCases(
    std::span<const uint32_t> users, std::span<const uint32_t> held_out,
    const std::vector<std::vector<uint32_t>>& negatives) const {
  std::vector<EvalCase> cases(users.size());
  for (size_t c = 0; c < users.size(); ++c) {
    const uint32_t user = users[c];
    EvalCase& eval = cases[c];
    eval.user_id = user_ids_[user];
    eval.user = user;
    eval.test_item_id = item_ids_[held_out[c]];
    eval.candidate_items.push_back(held_out[c]);
    eval.candidate_items.insert(eval.candidate_items.end(), negatives[c].begin(),
                                negatives[c].end());
    for (const uint32_t item : eval.candidate_items) eval.candidate_ids.push_back(item_ids_[item]);
  }
  return cases;
}

std::optional<uint32_t> InteractionDataset::FindItem(std::string_view item_id) const {
  const auto it = item_index_.find(std::string(item_id));
  if (it == item_index_.end()) return std::nullopt;
  return it->second;
}

uint32_t InteractionDataset::TrainCount(std::string_view item_id) const {
  const std::optional<uint32_t> item = FindItem(item_id);
  return item ? item_train_counts_[*item] : 0;
}

std::string InteractionDataset::Describe() const {
  std::string text = "interactions " + std::filesystem::path(options_.path).filename().string() +
                     ": " + std::to_string(num_users()) + " users, " +
                     std::to_string(num_items()) + " items, " + std::to_string(num_train()) +
                     " train, " + std::to_string(eval_cases_.size()) + " eval users (1+" +
                     std::to_string(options_.negatives) + " candidates), " +
                     std::to_string(user_slots_) + "+" + std::to_string(item_slots_) + " slots";
  if (options_.user_features) {
    text += ", " + std::to_string(users_without_features_) + " users without features";
  }
  if (options_.item_features) {
    text += ", " + std::to_string(items_without_features_) + " items without features";
  }
  if (options_.user_history > 0) {
    text += ", user history of up to " + std::to_string(options_.user_history) + " items";
    if (options_.causal_history) text += " (before each sample)";
  }
  if (options_.validation) {
    text += ", " + std::to_string(validation_cases_.size()) + " validation users (" +
            std::to_string(users_without_validation_) + " with too few interactions to spare one)";
  }
  return text;
}

}  // namespace ember::trainer
