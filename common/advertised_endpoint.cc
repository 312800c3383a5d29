// AdvertisedEndpoint implementation.
#include "common/advertised_endpoint.h"

#include <unistd.h>

#include <cctype>

namespace ember {
namespace {

constexpr std::string_view kTcp = "tcp://";

struct HostPort {
  std::string_view host, port;  // port empty when not given
};

// Splits HOST[:PORT], where HOST may be a bracketed IPv6 address.
Result<HostPort> SplitHostPort(std::string_view text, std::string_view what) {
  HostPort parts;
  size_t host_end = text.size();
  if (!text.empty() && text.front() == '[') {
    host_end = text.find(']');
    if (host_end == std::string_view::npos) {
      return InvalidArgument(std::string(what) + " '" + std::string(text) +
                             "': an IPv6 address needs its closing ']'");
    }
    ++host_end;
    if (host_end < text.size() && text[host_end] != ':') {
      return InvalidArgument(std::string(what) + " '" + std::string(text) +
                             "': expected ':PORT' after the address");
    }
  } else {
    host_end = text.rfind(':');
    if (host_end == std::string_view::npos) host_end = text.size();
  }
  parts.host = text.substr(0, host_end);
  if (host_end < text.size()) parts.port = text.substr(host_end + 1);
  return parts;
}

bool IsValidHost(std::string_view host) {
  if (host.empty()) return false;
  for (const char c : host) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (!(std::isalnum(u) || c == '.' || c == '-' || c == '_' || c == ':' || c == '[' ||
          c == ']')) {
      return false;
    }
  }
  return true;
}

bool IsValidPort(std::string_view port) {
  if (port.empty() || port.size() > 5) return false;
  uint32_t value = 0;
  for (const char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  return value >= 1 && value <= 65535;
}

bool IsWildcardHost(std::string_view host) {
  return host == "0.0.0.0" || host == "*" || host == "[::]" || host == "::" || host == "[*]";
}

std::string HostName() {
  char name[256] = {0};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace

Result<std::string> AdvertisedEndpoint(std::string_view bound, std::string_view advertise) {
  if (bound.substr(0, kTcp.size()) != kTcp) {
    if (advertise.empty()) return std::string(bound);
    return InvalidArgument("advertised address '" + std::string(advertise) +
                           "': only a tcp:// endpoint can be advertised elsewhere; this one is "
                           "bound at '" +
                           std::string(bound) + "'");
  }
  ASSIGN_OR_RETURN(HostPort bound_parts, SplitHostPort(bound.substr(kTcp.size()), "endpoint"));
  if (advertise.empty()) {
    if (!IsWildcardHost(bound_parts.host)) return std::string(bound);
    return std::string(kTcp) + HostName() + ":" + std::string(bound_parts.port);
  }
  std::string_view text = advertise;
  if (text.substr(0, kTcp.size()) == kTcp) text.remove_prefix(kTcp.size());
  ASSIGN_OR_RETURN(HostPort parts, SplitHostPort(text, "advertised address"));
  if (!IsValidHost(parts.host) || IsWildcardHost(parts.host)) {
    return InvalidArgument("advertised address '" + std::string(advertise) +
                           "': expected HOST[:PORT] with a host name or address others can "
                           "reach");
  }
  if (!parts.port.empty() && !IsValidPort(parts.port)) {
    return InvalidArgument("advertised address '" + std::string(advertise) + "': port '" +
                           std::string(parts.port) + "' is not a number from 1 to 65535");
  }
  const std::string_view port = parts.port.empty() ? bound_parts.port : parts.port;
  return std::string(kTcp) + std::string(parts.host) + ":" + std::string(port);
}

}  // namespace ember
