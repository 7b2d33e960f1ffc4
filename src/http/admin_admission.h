// Who the admin API lets in, and the counts of those it turns away: the bearer-token rule, the
// lane a request waits in (probes have their own), and the belfry_admin_* counters of refusals.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <optional>
#include <string_view>

namespace belfry {

// True iff `path` needs the bearer token when one is set: /metrics and every /v1 route. The
// probes (/healthz, /readyz) are always open.
bool RequiresAuth(std::string_view path);

// The token of an Authorization header's value "Bearer <token>" (the scheme in any case, spaces
// around the token ignored); nullopt for any other value.
std::optional<std::string_view> BearerToken(std::string_view authorization);

// True iff `authorization` (the Authorization header's value) is "Bearer <token>": the scheme in
// any case, spaces around the token ignored, the token compared in constant time. An empty
// `token` (no auth configured) admits every request.
bool BearerTokenMatches(std::string_view authorization, std::string_view token);

// Compares in time that depends only on the lengths, not on where the first difference is.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// True iff the request target (path and query) is a probe, served by the probe lane.
bool IsProbePath(std::string_view target);

// belfry_admin_overload_total{reason} and belfry_admin_request_head_timeouts_total.
struct AdmissionCounters {
  explicit AdmissionCounters(prometheus::Registry& registry);
  prometheus::Family<prometheus::Counter>& family;
  prometheus::Counter& sessions;     // no database session freed up within admin.read_wait
  prometheus::Counter& connections;  // every worker busy and the queue full, or max_connections open
  prometheus::Counter& client;       // the client's address had max_connections_per_client open
  prometheus::Counter& head_timeouts;
};

}  // namespace belfry
