#include "loadtest/trigger_tally.h"

#include <fmt/format.h>

#include <charconv>

#include "core/iso_time.h"
#include "loadtest/churn_expectations.h"

namespace belfry::loadtest {

bool ScheduledForOf(const LiveRecord& record, EpochMs* scheduled_for) {
  const std::string_view sf = record.headers[1];
  return record.has_header[0] && record.has_header[1] &&
         std::from_chars(sf.data(), sf.data() + sf.size(), *scheduled_for).ec == std::errc();
}

TriggerExpectations::Verdict TriggerTally::Add(const LiveRecord& record) {
  received_.fetch_add(1, std::memory_order_relaxed);
  value_bytes_ += static_cast<int64_t>(record.value.size());
  EpochMs scheduled_for = 0;
  if (!ScheduledForOf(record, &scheduled_for)) {
    malformed_.fetch_add(1, std::memory_order_relaxed);
    return TriggerExpectations::Verdict::kNotDue;
  }
  if (record.has_header[2]) {
    manual_.fetch_add(1, std::memory_order_relaxed);
    return TriggerExpectations::Verdict::kManual;
  }
  const TriggerExpectations::Verdict verdict =
      churn_ != nullptr ? churn_->Record(record.headers[0], scheduled_for, record.received_ms)
                        : expectations_->Record(record.headers[0], scheduled_for);
  switch (verdict) {
    case TriggerExpectations::Verdict::kExpected:
      lateness_.Record(record.received_ms - scheduled_for);
      if (first_arrival_ms_ == 0) first_arrival_ms_ = record.received_ms;
      last_arrival_ms_ = record.received_ms;
      if (arrivals_ != nullptr) arrivals_->Add();
      break;
    case TriggerExpectations::Verdict::kDuplicate:
      duplicates_.fetch_add(1, std::memory_order_relaxed);
      break;
    case TriggerExpectations::Verdict::kOutsideWindow:
      outside_window_.fetch_add(1, std::memory_order_relaxed);
      break;
    case TriggerExpectations::Verdict::kManual:
      break;
    case TriggerExpectations::Verdict::kUnknownJob:
    case TriggerExpectations::Verdict::kNotDue:
      (verdict == TriggerExpectations::Verdict::kUnknownJob ? unknown_job_ : not_due_)
          .fetch_add(1, std::memory_order_relaxed);
      if (first_unexpected_.empty()) {
        first_unexpected_ = fmt::format(
            "{} job {} at {} on {}",
            verdict == TriggerExpectations::Verdict::kUnknownJob ? "unknown" : "not due:", record.headers[0],
            FormatIsoTime(scheduled_for), record.topic);
      }
      break;
  }
  return verdict;
}

nlohmann::ordered_json TriggerTally::Json() const {
  nlohmann::ordered_json j;
  j["received_messages"] = received();
  j["duplicates"] = duplicates();
  j["unexpected"] = {
      {"total", unexpected()}, {"unknown_job", unknown_job_.load()}, {"not_due", not_due_.load()}};
  if (!first_unexpected_.empty()) j["unexpected"]["first"] = first_unexpected_;
  j["outside_window"] = outside_window_.load();
  j["malformed"] = malformed();
  j["manual"] = manual();
  return j;
}

std::string TriggerTally::ProgressText() const {
  return fmt::format("dup {} | unexpected {} | msgs {}", duplicates(), unexpected(), received());
}

void TriggerTally::WriteDelivery(int64_t expected, int64_t received, int64_t missing,
                                 const std::vector<TriggerExpectations::MissingTrigger>& examples,
                                 nlohmann::ordered_json* j) const {
  (*j)["expected"] = expected;
  (*j)["received"] = received;
  (*j)["missing"] = missing;
  nlohmann::ordered_json missing_list = nlohmann::ordered_json::array();
  for (const auto& m : examples)
    missing_list.push_back(fmt::format("{} @ {}", m.job_id, FormatIsoTime(m.slot_ms)));
  if (!examples.empty()) (*j)["missing_examples"] = missing_list;
  const nlohmann::ordered_json counts = Json();  // items() does not keep a temporary alive
  for (const auto& [key, value] : counts.items()) (*j)[key] = value;
}

}  // namespace belfry::loadtest
