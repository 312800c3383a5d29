// DataSource defaults for sources that cannot save their position.
#include "trainer/data_source.h"

namespace ember::trainer {

Result<std::string> DataSource::SavePosition() const {
  return FailedPrecondition("the data source '" + Describe() +
                            "' cannot save its position for a checkpoint");
}

Status DataSource::RestorePosition(std::string_view) {
  return FailedPrecondition("the data source '" + Describe() +
                            "' cannot resume from a checkpoint's position");
}

}  // namespace ember::trainer
