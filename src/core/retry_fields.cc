#include "core/retry_fields.h"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <string_view>

#include "core/message_quote.h"
#include "core/retry_policy.h"

namespace belfry {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr int64_t kMaxDelaySeconds = kMaxRetryDelayMs / 1000;

Status BadBackoff(std::string message) { return Status::Invalid("invalid_retry_backoff", std::move(message)); }

// An integer JSON number in [lo, hi]; nullopt otherwise.
std::optional<int64_t> IntegerIn(const element& el, int64_t lo, int64_t hi) {
  int64_t v = 0;
  if (el.type() != element_type::INT64 || el.get_int64().get(v) != simdjson::SUCCESS) return std::nullopt;
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

// The value as written (minified), cut after 40 bytes, control characters escaped.
std::string Shown(const element& el) { return ExcerptForMessage(simdjson::minify(el), 40); }

}  // namespace

Status ParseMaxRetries(const element& el, int32_t* out) {
  const std::optional<int64_t> v = IntegerIn(el, 0, kMaxRetriesLimit);
  if (!v) {
    return Status::Invalid("invalid_retries", fmt::format("maxRetries {} must be an integer in [0, {}]",
                                                           Shown(el), kMaxRetriesLimit));
  }
  *out = static_cast<int32_t>(*v);
  return Status::Ok();
}

Status ParseRetryBackoff(const element& el, RetryBackoff* out) {
  simdjson::dom::object object;
  if (el.get_object().get(object) != simdjson::SUCCESS) {
    return Status::Invalid("wrong_type", "field \"retryBackoff\" must be an object");
  }
  std::optional<int64_t> initial_s, max_s;
  std::optional<double> multiplier;
  bool seen[3] = {false, false, false};
  for (const simdjson::dom::key_value_pair member : object) {
    const std::string_view name = member.key;
    const int index = name == "initialSeconds" ? 0 : name == "multiplier" ? 1 : name == "maxSeconds" ? 2 : -1;
    if (index < 0) {
      return BadBackoff(fmt::format("retryBackoff has an unknown member {} (known: initialSeconds, "
                                    "multiplier, maxSeconds)",
                                    QuoteForMessage(name)));
    }
    if (seen[index]) return BadBackoff(fmt::format("retryBackoff.{} appears more than once", name));
    seen[index] = true;
    if (member.value.is_null()) continue;
    if (index == 1) {
      double m = 0;
      if (member.value.get_double().get(m) != simdjson::SUCCESS || !std::isfinite(m) || m < 1.0 ||
          m > kMaxRetryMultiplier) {
        return BadBackoff(fmt::format("retryBackoff.multiplier {} must be a number in [1, {}]",
                                      Shown(member.value), kMaxRetryMultiplier));
      }
      multiplier = m;
      continue;
    }
    const std::optional<int64_t> v = IntegerIn(member.value, 1, kMaxDelaySeconds);
    if (!v) {
      return BadBackoff(fmt::format("retryBackoff.{} {} must be an integer number of seconds in [1, {}]",
                                    name, Shown(member.value), kMaxDelaySeconds));
    }
    (index == 0 ? initial_s : max_s) = v;
  }
  RetryBackoff b;
  if (initial_s) b.initial_ms = *initial_s * 1000;
  if (multiplier) b.multiplier = *multiplier;
  if (max_s) {
    b.max_ms = *max_s * 1000;
  } else {
    b.max_ms = std::max(b.max_ms, b.initial_ms);
  }
  if (b.max_ms < b.initial_ms) {
    return BadBackoff(fmt::format("retryBackoff.maxSeconds {} is below initialSeconds {}", b.max_ms / 1000,
                                  b.initial_ms / 1000));
  }
  *out = b;
  return Status::Ok();
}

}  // namespace belfry
