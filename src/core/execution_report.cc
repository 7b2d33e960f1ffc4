#include "core/execution_report.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <tuple>

#include "core/iso_time.h"
#include "core/json_object_fields.h"
#include "core/json_writer.h"
#include "core/message_quote.h"

namespace belfry {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr size_t kMaxWorkerBytes = 255;
constexpr int64_t kMaxAttempt = 1000;

Status Reject(std::string reason, std::string message) {
  return Status::Invalid(std::move(reason), std::move(message));
}

std::string Quote(std::string_view s) { return QuoteForMessage(s, kMaxEchoBytes); }

bool HasControlChar(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

// Valid UTF-8 prefix of at most `max` bytes.
std::string_view TruncateUtf8(std::string_view s, size_t max) {
  if (s.size() <= max) return s;
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // s[n] is a continuation byte
  return s.substr(0, n);
}

enum Field : size_t {
  kJobId,
  kScheduledFor,
  kStatus,
  kError,
  kStartedAt,
  kFinishedAt,
  kWorker,
  kAttempt,
  kCount
};
constexpr std::array<std::string_view, kCount> kNames = {"jobId",     "scheduledFor", "status", "error",
                                                         "startedAt", "finishedAt",   "worker", "attempt"};

static_assert(kCount <= JsonObjectFields::kMaxFields);

// A time: ISO-8601 text or integer epoch milliseconds.
Status GetTime(const JsonObjectFields& fields, Field f, std::optional<EpochMs>* out) {
  const std::optional<element> el = fields.Get(f);
  if (!el) return Status::Ok();
  if (el->type() == element_type::INT64) {
    int64_t ms = -1;
    if (el->get_int64().get(ms) != simdjson::SUCCESS) ms = -1;
    if (ms < 0 || ms > 253'402'300'799'999) {
      return Reject("invalid_date", fmt::format("{} {} is outside years 1970-9999", kNames[f], ms));
    }
    *out = ms;
    return Status::Ok();
  }
  std::string_view s;
  if (el->get_string().get(s) != simdjson::SUCCESS) {
    return fields.WrongType(f, "an ISO-8601 string or epoch milliseconds", *el);
  }
  *out = ParseIsoTime(s);
  if (!*out) return Reject("invalid_date", fmt::format("{} {} is not a valid UTC time", kNames[f], Quote(s)));
  return Status::Ok();
}

}  // namespace

const char* ExecutionStatusName(ExecutionStatus s) {
  switch (s) {
    case ExecutionStatus::kSucceeded:
      return "succeeded";
    case ExecutionStatus::kFailed:
      return "failed";
    case ExecutionStatus::kRunning:
      return "running";
  }
  return "unknown";
}

StatusOr<ExecutionReport> ParseExecutionReport(const RawExecution& raw, const ExecutionRules& rules) {
  if (!raw.value) return Reject("tombstone", "an execution report must have a value");
  StatusOr<JsonObjectFields> parsed =
      JsonObjectFields::Parse(*raw.value, {"report", kNames, rules.max_value_bytes});
  if (!parsed.ok()) return parsed.status();
  const JsonObjectFields& fields = parsed.value();

  ExecutionReport r;
  r.source = raw.source;
  std::optional<std::string_view> job_id;
  if (Status s = fields.GetString(kJobId, &job_id); !s.ok()) return s;
  if (!job_id || job_id->empty()) return Reject("missing_field", "report has no jobId");
  if (job_id->size() > kMaxJobIdBytes || HasControlChar(*job_id)) {
    return Reject("invalid_id", fmt::format("jobId {} is over {} bytes or has a control character",
                                            Quote(*job_id), kMaxJobIdBytes));
  }
  if (!raw.key || *raw.key != *job_id) {
    return Reject("key_mismatch", fmt::format("the Kafka key must equal the jobId {}", Quote(*job_id)));
  }
  r.job_id = std::string(*job_id);

  std::optional<EpochMs> scheduled_for;
  if (Status s = GetTime(fields, kScheduledFor, &scheduled_for); !s.ok()) return s;
  if (!scheduled_for) return Reject("missing_field", "report has no scheduledFor");
  r.scheduled_for_ms = *scheduled_for;

  std::optional<std::string_view> status;
  if (Status s = fields.GetString(kStatus, &status); !s.ok()) return s;
  if (!status) return Reject("missing_field", "report has no status");
  if (*status == "succeeded") {
    r.status = ExecutionStatus::kSucceeded;
  } else if (*status == "failed") {
    r.status = ExecutionStatus::kFailed;
  } else if (*status == "running") {
    r.status = ExecutionStatus::kRunning;
  } else {
    return Reject("invalid_status",
                  fmt::format("status {} is not one of succeeded, failed, running", Quote(*status)));
  }

  std::optional<std::string_view> error;
  if (Status s = fields.GetString(kError, &error); !s.ok()) return s;
  if (error) r.error = std::string(TruncateUtf8(*error, static_cast<size_t>(rules.max_error_bytes)));
  if (r.error.find('\0') != std::string::npos)
    r.error.erase(std::remove(r.error.begin(), r.error.end(), '\0'), r.error.end());

  if (Status s = GetTime(fields, kStartedAt, &r.started_at); !s.ok()) return s;
  if (Status s = GetTime(fields, kFinishedAt, &r.finished_at); !s.ok()) return s;

  std::optional<std::string_view> worker;
  if (Status s = fields.GetString(kWorker, &worker); !s.ok()) return s;
  if (worker) {
    if (worker->size() > kMaxWorkerBytes || HasControlChar(*worker)) {
      return Reject("invalid_worker",
                    fmt::format("worker is over {} bytes or has a control character", kMaxWorkerBytes));
    }
    r.worker = std::string(*worker);
  }

  if (const std::optional<element> el = fields.Get(kAttempt)) {
    int64_t attempt = 0;
    if (el->type() != element_type::INT64 || el->get_int64().get(attempt) != simdjson::SUCCESS) {
      return Reject("invalid_attempt", "attempt must be an integer");
    }
    if (attempt < 0 || attempt > kMaxAttempt) {
      return Reject("invalid_attempt", fmt::format("attempt {} is outside 0..{}", attempt, kMaxAttempt));
    }
    r.attempt = static_cast<int32_t>(attempt);
  }
  return r;
}

std::string EncodeExecutionRecord(const ExecutionRecord& record) {
  const ExecutionReport& r = record.report;
  std::string out = "{\"jobId\":";
  AppendJsonString(&out, r.job_id);
  out += ",\"scheduledFor\":";
  AppendJsonString(&out, FormatIsoTime(r.scheduled_for_ms));
  fmt::format_to(std::back_inserter(out), ",\"attempt\":{},\"status\":\"{}\",\"error\":", r.attempt,
                 ExecutionStatusName(r.status));
  AppendJsonStringOrNull(&out, r.error);
  out += ",\"startedAt\":";
  AppendJsonTimeOrNull(&out, r.started_at);
  out += ",\"finishedAt\":";
  AppendJsonTimeOrNull(&out, r.finished_at);
  out += ",\"worker\":";
  AppendJsonStringOrNull(&out, r.worker);
  out += ",\"receivedAt\":";
  AppendJsonTimeOrNull(&out, record.received_at ? std::optional<EpochMs>(record.received_at) : std::nullopt);
  out += '}';
  return out;
}

JobStats FoldJobStats(const std::optional<JobStats>& current, const std::string& job_id,
                      std::vector<ExecutionReport> fresh) {
  JobStats st = current.value_or(JobStats{});
  st.job_id = job_id;
  // Oldest first; failed before succeeded for one (slot, attempt), so a success reported together
  // with a failure of the same attempt ends the streak.
  auto rank = [](ExecutionStatus s) { return s == ExecutionStatus::kFailed ? 0 : 1; };
  std::erase_if(fresh, [](const ExecutionReport& r) { return r.status == ExecutionStatus::kRunning; });
  std::sort(fresh.begin(), fresh.end(), [&](const ExecutionReport& a, const ExecutionReport& b) {
    return std::make_tuple(a.scheduled_for_ms, a.attempt, rank(a.status)) <
           std::make_tuple(b.scheduled_for_ms, b.attempt, rank(b.status));
  });
  for (const ExecutionReport& r : fresh) {
    const bool failed = r.status == ExecutionStatus::kFailed;
    if (failed) {
      ++st.total_failed;
    } else {
      ++st.total_succeeded;
      st.last_success_scheduled_for_ms =
          std::max(st.last_success_scheduled_for_ms.value_or(r.scheduled_for_ms), r.scheduled_for_ms);
    }
    const bool newest = !st.last_status ||
                        std::make_tuple(r.scheduled_for_ms, r.attempt, rank(r.status)) >=
                            std::make_tuple(st.last_scheduled_for_ms, st.last_attempt, rank(*st.last_status));
    if (!newest) continue;  // a late report of an older run: counted, but not the last outcome
    st.last_status = r.status;
    st.last_scheduled_for_ms = r.scheduled_for_ms;
    st.last_attempt = r.attempt;
    st.last_error = r.error;
    st.last_finished_at = r.finished_at;
    st.consecutive_failures = failed ? st.consecutive_failures + 1 : 0;
  }
  return st;
}

}  // namespace belfry
