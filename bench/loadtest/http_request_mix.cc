#include "loadtest/http_request_mix.h"

#include <fmt/format.h>

#include <charconv>
#include <stdexcept>

#include "loadtest/workload.h"

namespace belfry::loadtest {
namespace {

constexpr std::array<std::string_view, kApiRouteCount> kRouteNames = {"get", "executions", "owners",
                                                                      "missing", "healthz"};

}  // namespace

std::string_view ApiRouteName(ApiRoute route) { return kRouteNames[static_cast<size_t>(route)]; }

ApiRouteMix ApiRouteMix::Parse(std::string_view text) {
  ApiRouteMix mix;
  std::array<bool, kApiRouteCount> given{};
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      throw std::invalid_argument(fmt::format("mix entry '{}': want name=weight", item));
    const std::string_view name = item.substr(0, eq);
    const std::string_view digits = item.substr(eq + 1);
    size_t index = kApiRouteCount;
    for (size_t i = 0; i < kApiRouteCount; ++i) {
      if (kRouteNames[i] == name) index = i;
    }
    if (index == kApiRouteCount) {
      throw std::invalid_argument(fmt::format(
          "mix entry '{}': unknown route '{}' (use get, executions, owners, missing, healthz)", item, name));
    }
    if (given[index]) throw std::invalid_argument(fmt::format("mix entry '{}': route given twice", item));
    uint32_t weight = 0;
    const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), weight);
    if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size() || weight > 1'000'000) {
      throw std::invalid_argument(
          fmt::format("mix entry '{}': weight must be an integer in 0..1000000", item));
    }
    given[index] = true;
    mix.weights_[index] = weight;
    mix.total_ += weight;
  }
  if (mix.total_ == 0) throw std::invalid_argument("mix has no positive weight");
  return mix;
}

ApiRoute ApiRouteMix::Pick(uint64_t u) const {
  for (size_t i = 0; i < kApiRouteCount; ++i) {
    if (u < weights_[i]) return static_cast<ApiRoute>(i);
    u -= weights_[i];
  }
  // u >= total(): the last route with a weight.
  for (size_t i = kApiRouteCount; i-- > 0;) {
    if (weights_[i] > 0) return static_cast<ApiRoute>(i);
  }
  return ApiRoute::kGetJob;
}

std::string ApiRouteMix::ToString() const {
  std::string out;
  for (size_t i = 0; i < kApiRouteCount; ++i) {
    if (weights_[i] == 0) continue;
    if (!out.empty()) out += ',';
    out += fmt::format("{}={}", kRouteNames[i], weights_[i]);
  }
  return out;
}

HttpRequestMix::HttpRequestMix(JobCommandFactory factory, ApiRouteMix mix, ApiRequestOptions options)
    : factory_(std::move(factory)), mix_(mix), options_(options) {
  if (options_.jobs == 0) throw std::invalid_argument("the request mix needs at least one job");
  if (factory_.spec().owners <= 0) throw std::invalid_argument("the request mix needs at least one owner");
}

std::string HttpRequestMix::OwnerOf(uint64_t n) const {
  // JobCommandFactory::Upsert's rule; http_request_mix_test checks the two agree.
  return fmt::format("lt-owner-{}", (Mix64(n) >> 16) % static_cast<uint64_t>(factory_.spec().owners));
}

ApiRequest HttpRequestMix::For(ApiRoute route, uint64_t n) const {
  ApiRequest r;
  r.route = route;
  switch (route) {
    case ApiRoute::kGetJob: {
      const std::string id = factory_.Id(n);
      r.target = "/v1/jobs/" + PercentEncode(id);
      r.expect_in_body = "\"id\":\"" + JsonEscape(id) + "\"";
      break;
    }
    case ApiRoute::kExecutions: {
      const std::string id = factory_.Id(n);
      r.target = fmt::format("/v1/jobs/{}/executions?limit={}", PercentEncode(id), options_.executions_limit);
      r.expect_in_body = "\"id\":\"" + JsonEscape(id) + "\"";
      break;
    }
    case ApiRoute::kListByOwner: {
      const std::string owner = OwnerOf(n);
      r.target = fmt::format("/v1/jobs?owner={}&limit={}", PercentEncode(owner), options_.list_limit);
      r.expect_in_body = "\"owner\":\"" + JsonEscape(owner) + "\"";
      break;
    }
    case ApiRoute::kMissingJob:
      r.target = "/v1/jobs/" + PercentEncode(factory_.Id(n));
      r.expected_status = 404;
      break;
    case ApiRoute::kHealthz:
      r.target = "/healthz";
      r.expect_in_body = "\"status\":\"ok\"";
      break;
  }
  return r;
}

ApiRequest HttpRequestMix::Next(std::mt19937_64& rng) const {
  const ApiRoute route = mix_.Pick(rng() % mix_.total());
  const uint64_t k = rng() % options_.jobs;
  // Missing ids lie just past the seeded range (a second seed at --first = first + jobs would
  // create them, so keep the two apart).
  const uint64_t n = route == ApiRoute::kMissingJob ? options_.first + options_.jobs + k : options_.first + k;
  return For(route, n);
}

std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string JsonEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out.push_back(ch);
        }
    }
  }
  return out;
}

}  // namespace belfry::loadtest
