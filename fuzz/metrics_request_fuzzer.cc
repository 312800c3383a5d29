// Fuzzes what a metrics endpoint (common/metrics_endpoint.h) answers to the bytes a client sends
// (MetricsEndpoint::Respond: the request line's method and path, then the scrape). One endpoint,
// bound to a loopback port the system picks, serves every input.
// Corpus: fuzz/corpus/metrics_request/.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/check.h"
#include "common/metrics_endpoint.h"
#include "fuzz/fuzz_support.h"

namespace ember::fuzz {
namespace {

void Respond(std::string_view request) {
  static const std::unique_ptr<MetricsEndpoint> endpoint = [] {
    auto started = MetricsEndpoint::Start({"127.0.0.1", 0}, "fuzz");
    EMBER_CHECK(started.ok(), "cannot start the metrics endpoint");
    return std::move(*started);
  }();
  const std::string response = endpoint->Respond(request.substr(0, 8192));
  EMBER_CHECK(response.empty() || response.rfind("HTTP/1.1 ", 0) == 0, "not an HTTP response");
}

}  // namespace
}  // namespace ember::fuzz

EMBER_FUZZ_TARGET(ember::fuzz::Respond)
