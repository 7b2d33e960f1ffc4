#include "http/listen_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "http/request_params.h"

namespace belfry {

StatusOr<ListenAddress> ParseListenAddress(const std::string& listen) {
  auto bad = [&](const std::string& why) {
    return Status::Invalid("admin_listen", "admin.listen \"" + listen + "\" is invalid: " + why +
                                               " (expected host:port or [ipv6]:port)");
  };
  ListenAddress a;
  std::string_view port_text;
  if (!listen.empty() && listen.front() == '[') {
    const size_t close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
      return bad("missing ']:' after the IPv6 address");
    }
    a.host = listen.substr(1, close - 1);
    port_text = std::string_view(listen).substr(close + 2);
  } else {
    const size_t colon = listen.rfind(':');
    if (colon == std::string::npos) return bad("missing port");
    a.host = listen.substr(0, colon);
    if (a.host.find(':') != std::string::npos) return bad("an IPv6 address must be written in brackets");
    port_text = std::string_view(listen).substr(colon + 1);
  }
  if (a.host.empty()) return bad("missing host (use 0.0.0.0 for every interface)");
  const std::optional<int64_t> port = ParseInt(port_text);
  if (!port || *port < 0 || *port > 65535) return bad("port must be an integer in 0..65535");
  a.port = static_cast<int>(*port);
  return a;
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

}  // namespace belfry
