// MetricsAddress parsing.
#include "common/metrics_address.h"

#include <arpa/inet.h>

#include <charconv>

namespace ember {

Result<MetricsAddress> MetricsAddress::Offset(uint32_t offset) const {
  if (port == 0 || offset == 0) return *this;
  if (port + uint64_t{offset} > 65535) {
    return InvalidArgument("metrics port " + std::to_string(port) + " + " + std::to_string(offset) +
                           " is past 65535");
  }
  return MetricsAddress{host, port + offset};
}

Result<MetricsAddress> ParseMetricsAddress(std::string_view text, std::string_view what) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument(std::string(what) + ": '" + std::string(text) + "' " + why +
                           " (expected HOST:PORT, e.g. 127.0.0.1:9400 or 0.0.0.0:9400; port 0 "
                           "picks a free one)");
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad("has no port");
  MetricsAddress address;
  address.host = std::string(text.substr(0, colon));
  const std::string_view port = text.substr(colon + 1);
  if (address.host == "localhost") address.host = "127.0.0.1";
  in_addr parsed{};
  if (address.host.empty() || inet_pton(AF_INET, address.host.c_str(), &parsed) != 1) {
    return bad("has no IPv4 address (or localhost) as its host");
  }
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), address.port);
  if (port.empty() || error != std::errc() || end != port.data() + port.size() ||
      address.port > 65535) {
    return bad("has no port in 0..65535");
  }
  return address;
}

}  // namespace ember
