// The admin server's listen address (admin.listen): parsing "host:port" / "[v6-host]:port", and
// whether a host is loopback (which decides whether the API needs a token, admin_server.h).
#pragma once

#include <string>

#include "belfry/status.h"

namespace belfry {

struct ListenAddress {
  std::string host;
  int port = 0;
};

// Splits "host:port" / "[v6]:port" (port 0..65535); Invalid, naming admin.listen, on anything else.
StatusOr<ListenAddress> ParseListenAddress(const std::string& listen);

// True iff `host` is "localhost", an IPv4 address in 127.0.0.0/8, "::1" or an IPv4-mapped
// loopback ("::ffff:127.x.y.z").
bool IsLoopbackHost(const std::string& host);

}  // namespace belfry
