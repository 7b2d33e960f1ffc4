#include "http/admin_admission.h"

#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include <cctype>
#include <string>

namespace belfry {

bool RequiresAuth(std::string_view path) {
  return path == "/metrics" || path == "/v1" || path.starts_with("/v1/");
}

std::optional<std::string_view> BearerToken(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() < kScheme.size()) return std::nullopt;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return std::nullopt;
  }
  std::string_view presented = authorization.substr(kScheme.size());
  while (!presented.empty() && presented.front() == ' ') presented.remove_prefix(1);
  while (!presented.empty() && presented.back() == ' ') presented.remove_suffix(1);
  return presented;
}

bool BearerTokenMatches(std::string_view authorization, std::string_view token) {
  if (token.empty()) return true;
  const std::optional<std::string_view> presented = BearerToken(authorization);
  return presented && ConstantTimeEquals(*presented, token);
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = a.size();
  for (size_t i = 0; i < n; ++i) {
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(a[i]) ^ y;
  }
  return diff == 0;
}

bool IsProbePath(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  return path == "/healthz" || path == "/readyz";
}

AdmissionCounters::AdmissionCounters(prometheus::Registry& registry)
    : family(prometheus::BuildCounter()
                 .Name("belfry_admin_overload_total")
                 .Help("Admin API requests answered 503 + Retry-After because the node was saturated, by "
                       "reason (sessions: no database session freed up within admin.read_wait; "
                       "connections: every worker was busy and admin.max_queued_connections were waiting, "
                       "or admin.max_connections were open; client: the client's address had "
                       "admin.max_connections_per_client open).")
                 .Register(registry)),
      sessions(family.Add({{"reason", "sessions"}})),
      connections(family.Add({{"reason", "connections"}})),
      client(family.Add({{"reason", "client"}})),
      head_timeouts(prometheus::BuildCounter()
                        .Name("belfry_admin_request_head_timeouts_total")
                        .Help("Admin API connections closed with 408 because the request head did not "
                              "arrive within admin.request_head_timeout.")
                        .Register(registry)
                        .Add({})) {}

}  // namespace belfry
