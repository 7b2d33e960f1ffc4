// libFuzzer target for ParseExecutionReport and EncodeExecutionRecord. Input layout as in
// command_parser_fuzz: the Kafka key, a '\n', then the value (no '\n': a tombstone; an empty
// first line: no key). Every rejection and every accepted report must satisfy the invariants
// below; a violation traps.
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/execution_report.h"
#include "core/iso_time.h"
#include "fuzz_checks.h"

namespace {

using belfry::EpochMs;
using belfry::ExecutionReport;
using belfry::RawExecution;
using belfry::StatusOr;
using belfry::fuzz::Check;
using belfry::fuzz::CheckRejection;
using belfry::fuzz::HasControlChar;
using belfry::fuzz::IsUtf8;

constexpr int64_t kLastInstantMs = 253'402'300'799'999;  // 9999-12-31T23:59:59.999Z

void CheckTime(EpochMs ms) {
  Check(ms >= 0 && ms <= kLastInstantMs);
  Check(belfry::ParseIsoTime(belfry::FormatIsoTime(ms)) == ms);
}

std::string_view StringMember(const simdjson::dom::element& doc, const char* name) {
  std::string_view s;
  Check(doc[name].get_string().get(s) == simdjson::SUCCESS);
  return s;
}

void CheckAccepted(const RawExecution& raw, const belfry::ExecutionRules& rules, const ExecutionReport& r) {
  Check(!r.job_id.empty() && r.job_id.size() <= 255 && !HasControlChar(r.job_id) && IsUtf8(r.job_id));
  Check(raw.key.has_value() && *raw.key == r.job_id);
  CheckTime(r.scheduled_for_ms);
  if (r.started_at) CheckTime(*r.started_at);
  if (r.finished_at) CheckTime(*r.finished_at);
  Check(static_cast<int64_t>(r.error.size()) <= rules.max_error_bytes);
  Check(IsUtf8(r.error) && r.error.find('\0') == std::string::npos);
  Check(r.worker.size() <= 255 && !HasControlChar(r.worker) && IsUtf8(r.worker));
  Check(r.attempt >= 0 && r.attempt <= 1000);

  // The history encoding is one JSON object that gives the same values back.
  belfry::ExecutionRecord record;
  record.report = r;
  record.received_at = r.scheduled_for_ms;
  const std::string encoded = belfry::EncodeExecutionRecord(record);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  Check(parser.parse(encoded).get(doc) == simdjson::SUCCESS);
  Check(doc.is_object());
  Check(StringMember(doc, "jobId") == r.job_id);
  Check(belfry::ParseIsoTime(StringMember(doc, "scheduledFor")) == r.scheduled_for_ms);
  if (r.error.empty()) {
    Check(doc["error"].is_null());
  } else {
    Check(StringMember(doc, "error") == r.error);
  }
  int64_t attempt = -1;
  Check(doc["attempt"].get_int64().get(attempt) == simdjson::SUCCESS && attempt == r.attempt);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  RawExecution raw;
  raw.source = belfry::SourcePosition{3, 99, 1'795'871'262'123};
  const size_t newline = input.find('\n');
  if (newline == std::string_view::npos) {
    raw.key = std::string(input);  // tombstone
  } else {
    if (newline > 0) raw.key = std::string(input.substr(0, newline));
    raw.value = std::string(input.substr(newline + 1));
  }
  belfry::ExecutionRules rules;
  rules.max_value_bytes = 64 * 1024;
  rules.max_error_bytes = 256;  // small, so that truncation at a UTF-8 boundary is reached often

  const StatusOr<ExecutionReport> result = belfry::ParseExecutionReport(raw, rules);
  if (result.ok()) {
    CheckAccepted(raw, rules, result.value());
  } else {
    CheckRejection(result.status());
  }
  return 0;
}
