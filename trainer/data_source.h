// DataSource: where a trainer's batches come from (synthetic Zipf keys, an interaction file...).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "trainer/batch.h"

namespace ember::trainer {

class DataSource {
 public:
  virtual ~DataSource() = default;

  // Fills *out with exactly batch_size samples (resizing its slot vectors, reusing their
  // capacity), starting a new epoch (reshuffled) whenever the current one runs out.
  virtual Status Next(uint32_t batch_size, Batch* out) = 0;

  virtual uint32_t user_slots() const = 0;
  virtual uint32_t item_slots() const = 0;
  // One line for logs, e.g. "synthetic zipf(1.05) vocab 10000000 x 6 slots".
  virtual std::string Describe() const = 0;

  // Where the source stands, as text a checkpoint stores: RestorePosition on a source built from
  // the same config makes its next batch the one this source would have produced next. A source
  // that cannot do this answers FailedPrecondition; a position it cannot use is InvalidArgument.
  virtual Result<std::string> SavePosition() const;
  virtual Status RestorePosition(std::string_view position);
};

}  // namespace ember::trainer
