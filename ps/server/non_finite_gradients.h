// What a server does with a push carrying a NaN or infinite gradient (NonFinitePolicy, the
// config's cluster.non_finite_gradients): refuse it whole (the default: InvalidArgument naming the
// table and the first offending key, no row changed), or skip the offending rows and apply the
// rest. Either way the server counts it in the table's stats.
//
// Thread-safety: free functions on the caller's data.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/wire.h"

namespace ember::ps {

enum class NonFinitePolicy : uint8_t {
  kRefuse,  // refuse the push; nothing applied
  kSkip,    // apply the push without the rows whose gradient is not finite
};
// "refuse" or "skip"; InvalidArgument naming the value otherwise.
Result<NonFinitePolicy> ParseNonFinitePolicy(const std::string& name);

// The functions below expect push.gradients to hold push.keys.size() * dim values (a push of
// another size is the table's to refuse).
//
// The index of the first row (of `dim` values) of `gradients` holding a NaN or infinity; -1 when
// every value is finite.
int64_t FirstNonFiniteRow(std::span<const float> gradients, uint32_t dim);

// InvalidArgument naming the table and the key of row `row` of `push`, whose gradient is not
// finite: the refusal of the kRefuse policy.
Status NonFiniteRefusal(const wire::PushRequest& push, uint32_t dim, int64_t row);

// The rows of `push` whose gradients are all finite, as keys and gradients of their own (for the
// kSkip policy); `skipped` is set to the number of rows left out.
struct FiniteRows {
  std::vector<uint64_t> keys;
  std::vector<float> gradients;
  size_t skipped = 0;
};
FiniteRows KeepFiniteRows(const wire::PushRequest& push, uint32_t dim);

}  // namespace ember::ps
