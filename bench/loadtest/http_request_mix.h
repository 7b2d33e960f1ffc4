// HttpRequestMix: which admin-API requests `belfry-loadtest api` sends, in what proportions, and
// for which jobs. Ids and owners are those a `seed` with the same --first/--jobs/--owners/
// --id-prefix created (JobCommandFactory's), so every request names something that exists,
// except the `missing` route, which asks for ids past the seeded range on purpose.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "loadtest/job_command_factory.h"

namespace belfry::loadtest {

enum class ApiRoute : uint8_t {
  kGetJob,       // GET /v1/jobs/{id}
  kExecutions,   // GET /v1/jobs/{id}/executions?limit=L
  kListByOwner,  // GET /v1/jobs?owner=O&limit=L
  kMissingJob,   // GET /v1/jobs/{id past the seeded range}: 404 expected
  kHealthz,      // GET /healthz: the generator's own ceiling
};
inline constexpr size_t kApiRouteCount = 5;

// The mix names: "get", "executions", "owners", "missing", "healthz".
std::string_view ApiRouteName(ApiRoute route);

// The mix.
inline constexpr char kDefaultApiMix[] = "get=70,executions=20,owners=10";

// Chooses routes by weight.
class ApiRouteMix final {
 public:
  // Parses "name=W,name=W,..." (weights are non-negative integers, at least one positive).
  // Throws std::invalid_argument naming the bad entry.
  static ApiRouteMix Parse(std::string_view text);

  // The route for a uniform draw `u` in [0, total()).
  ApiRoute Pick(uint64_t u) const;
  uint64_t total() const { return total_; }
  uint32_t weight(ApiRoute route) const { return weights_[static_cast<size_t>(route)]; }
  // "get=70,executions=20,owners=10" (non-zero weights, in route order).
  std::string ToString() const;

 private:
  std::array<uint32_t, kApiRouteCount> weights_{};
  uint64_t total_ = 0;
};

// One request to send.
struct ApiRequest {
  ApiRoute route = ApiRoute::kGetJob;
  std::string target;  // path and query, percent-encoded
  int expected_status = 200;
  // A 200 body must contain this (e.g. "id":"lt-0000000042"), so that a fast wrong answer is
  // caught; empty: not checked.
  std::string expect_in_body;
};

struct ApiRequestOptions {
  uint64_t first = 0;  // the seeded jobs are first .. first + jobs - 1
  uint64_t jobs = 100'000;
  int32_t executions_limit = 20;
  int32_t list_limit = 50;
};

class HttpRequestMix final {
 public:
  // `factory` must be configured like the seed's (id_prefix, owners). REQUIRES: options.jobs > 0.
  HttpRequestMix(JobCommandFactory factory, ApiRouteMix mix, ApiRequestOptions options);

  // Draws one request.
  ApiRequest Next(std::mt19937_64& rng) const;
  // The request of route `route` about job n.
  ApiRequest For(ApiRoute route, uint64_t n) const;

  // The owner the seed gave job n: "lt-owner-<k>". Picking the owner of a random seeded job
  // only ever names owners that exist, weighted by how many jobs they have.
  std::string OwnerOf(uint64_t n) const;

  const ApiRouteMix& mix() const { return mix_; }

 private:
  const JobCommandFactory factory_;
  const ApiRouteMix mix_;
  const ApiRequestOptions options_;
};

// RFC 3986 percent-encoding of everything but the unreserved characters (A-Z a-z 0-9 - . _ ~).
std::string PercentEncode(std::string_view text);

// `text` as the inside of a JSON string (quotes, backslashes and control characters escaped),
// as belfry's JSON writer would print it.
std::string JsonEscape(std::string_view text);

}  // namespace belfry::loadtest
