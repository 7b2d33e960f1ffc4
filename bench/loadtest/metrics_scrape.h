// Reading belfry's Prometheus /metrics from the harness: one plain HTTP/1.0 GET, and the few
// parsers the modes need (a counter's sum, a histogram's cumulative buckets and a quantile of
// the observations between two scrapes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace belfry::loadtest {

// The response to GET /metrics at `admin` (host:port), headers included (the parsers below look
// for their lines), or "" when it cannot be read.
std::string FetchMetricsText(const std::string& admin);

// The whole response (status line, headers, body) of one HTTP/1.0 GET of `target` at `admin`
// (host:port), with a bearer `token` when not empty; "" when it cannot be read.
std::string HttpGetRaw(const std::string& admin, const std::string& target, const std::string& token);

// belfry's admin address as its environment gives it: $BELFRY_ADMIN_LISTEN (0.0.0.0 as
// 127.0.0.1), else `fallback`.
std::string AdminAddressFromEnv(const std::string& fallback);

// The sum of the samples of `metric` (lines starting with it) that contain `label`, or -1 when
// there is none.
int64_t SumMetricSamples(std::string_view text, std::string_view metric, std::string_view label);

// A histogram's cumulative buckets: (upper bound `le`, observations <= le), ascending, the
// last one +Inf.
using CumulativeBuckets = std::vector<std::pair<double, double>>;

// The buckets of histogram `metric` (its `metric_bucket{...le="..."}` lines), or empty.
CumulativeBuckets ParseHistogramBuckets(std::string_view text, std::string_view metric);

// The q-quantile (0 < q < 1) of the observations made between two scrapes of the same
// histogram, interpolated linearly inside the bucket as Prometheus' histogram_quantile() does
// (a quantile in the +Inf bucket is the last finite bound). -1 when there was none, or when the
// bucket sets differ.
double QuantileBetween(const CumulativeBuckets& before, const CumulativeBuckets& after, double q);

}  // namespace belfry::loadtest
