// Non-finite gradient policy: parsing it, finding the offending rows, and leaving them out.
#include "ps/server/non_finite_gradients.h"

#include <algorithm>
#include <cmath>

#include "common/quote_for_error.h"

namespace ember::ps {
namespace {

bool RowIsFinite(const float* row, uint32_t dim) {
  return std::all_of(row, row + dim, [](float g) { return std::isfinite(g); });
}

}  // namespace

Result<NonFinitePolicy> ParseNonFinitePolicy(const std::string& name) {
  if (name == "refuse") return NonFinitePolicy::kRefuse;
  if (name == "skip") return NonFinitePolicy::kSkip;
  return InvalidArgument("non-finite gradient policy " + QuoteForError(name) +
                         ": expected refuse or skip");
}

int64_t FirstNonFiniteRow(std::span<const float> gradients, uint32_t dim) {
  const auto bad = std::find_if(gradients.begin(), gradients.end(),
                                [](float g) { return !std::isfinite(g); });
  if (bad == gradients.end()) return -1;
  return dim == 0 ? 0 : static_cast<int64_t>(bad - gradients.begin()) / dim;
}

Status NonFiniteRefusal(const wire::PushRequest& push, uint32_t dim, int64_t row) {
  const size_t index = static_cast<size_t>(row);
  const std::string key = index < push.keys.size() ? std::to_string(push.keys[index]) : "?";
  const float* values = push.gradients.data() + index * dim;
  const float* bad = std::find_if(values, values + dim, [](float g) { return !std::isfinite(g); });
  return InvalidArgument("push to table " + QuoteForError(push.table) + ": the gradient of key " +
                         key + " is not finite (" + std::to_string(*bad) + "); nothing applied");
}

FiniteRows KeepFiniteRows(const wire::PushRequest& push, uint32_t dim) {
  FiniteRows kept;
  kept.keys.reserve(push.keys.size());
  kept.gradients.reserve(push.gradients.size());
  for (size_t i = 0; i < push.keys.size(); ++i) {
    const float* row = push.gradients.data() + i * dim;
    if (!RowIsFinite(row, dim)) {
      ++kept.skipped;
      continue;
    }
    kept.keys.push_back(push.keys[i]);
    kept.gradients.insert(kept.gradients.end(), row, row + dim);
  }
  return kept;
}

}  // namespace ember::ps
