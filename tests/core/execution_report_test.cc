// Execution report parsing, the per-job counters, and the retry policy's pure rules.
#include "core/execution_report.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/iso_time.h"
#include "core/retry_policy.h"

namespace belfry {
namespace {

StatusOr<ExecutionReport> Parse(const std::optional<std::string>& key,
                                const std::optional<std::string>& value) {
  RawExecution raw;
  raw.key = key;
  raw.value = value;
  raw.source = SourcePosition{2, 77, 0};
  return ParseExecutionReport(raw, ExecutionRules{});
}

TEST(ExecutionReportTest, FullReport) {
  auto r = Parse(
      "job-1",
      R"({"jobId":"job-1","scheduledFor":"2026-11-22T13:37:32.500Z","status":"failed","error":"HTTP 503",)"
      R"("startedAt":"2026-11-22T13:37:33Z","finishedAt":1795873054000,"worker":"w-1","attempt":2})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->job_id, "job-1");
  EXPECT_EQ(r->scheduled_for_ms, *ParseIsoTime("2026-11-22T13:37:32.500Z"));
  EXPECT_EQ(r->status, ExecutionStatus::kFailed);
  EXPECT_EQ(r->error, "HTTP 503");
  EXPECT_EQ(*r->started_at, *ParseIsoTime("2026-11-22T13:37:33Z"));
  EXPECT_EQ(*r->finished_at, 1795873054000);
  EXPECT_EQ(r->worker, "w-1");
  EXPECT_EQ(r->attempt, 2);
  EXPECT_EQ(r->source.offset, 77);
}

TEST(ExecutionReportTest, MinimalReport) {
  auto r = Parse(
      "j", R"({"jobId":"j","scheduledFor":"2026-11-22T13:37:32.500Z","status":"running","error":null})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, ExecutionStatus::kRunning);
  EXPECT_EQ(r->attempt, 0);
  EXPECT_TRUE(r->error.empty());
  EXPECT_FALSE(r->finished_at.has_value());
}

TEST(ExecutionReportTest, LongErrorIsTruncatedAtACharacterBoundary) {
  std::string error(5000, 'x');
  error.replace(4095, 2, "\xc3\xa9");  // 'é' straddles the 4096-byte limit
  auto r = Parse("j", R"({"jobId":"j","scheduledFor":0,"status":"failed","error":")" + error + "\"}");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->error.size(), 4095u);
}

TEST(ExecutionReportTest, Rejections) {
  const std::string ok_sf = R"("scheduledFor":"2026-11-22T13:37:32.500Z")";
  const struct {
    std::optional<std::string> key;
    std::optional<std::string> value;
    const char* reason;
  } cases[] = {
      {"j", std::nullopt, "tombstone"},
      {"j", "not json", "invalid_json"},
      {"j", "[1,2]", "not_object"},
      {"j", R"({"jobId":"j",)" + ok_sf + R"(,"status":"succeeded","extra":1})", "unknown_field"},
      {"j", R"({"jobId":"j","jobId":"j",)" + ok_sf + R"(,"status":"succeeded"})", "duplicate_field"},
      {"j", R"({)" + ok_sf + R"(,"status":"succeeded"})", "missing_field"},
      {"j", R"({"jobId":"",)" + ok_sf + R"(,"status":"succeeded"})", "missing_field"},
      {"j", R"({"jobId":7,)" + ok_sf + R"(,"status":"succeeded"})", "wrong_type"},
      {"other", R"({"jobId":"j",)" + ok_sf + R"(,"status":"succeeded"})", "key_mismatch"},
      {std::nullopt, R"({"jobId":"j",)" + ok_sf + R"(,"status":"succeeded"})", "key_mismatch"},
      {"a\x01", R"({"jobId":"a\u0001",)" + ok_sf + R"(,"status":"succeeded"})", "invalid_id"},
      {"j", R"({"jobId":"j","status":"succeeded"})", "missing_field"},
      {"j", R"({"jobId":"j","scheduledFor":"yesterday","status":"succeeded"})", "invalid_date"},
      {"j", R"({"jobId":"j","scheduledFor":-5,"status":"succeeded"})", "invalid_date"},
      {"j", R"({"jobId":"j","scheduledFor":1.5,"status":"succeeded"})", "wrong_type"},
      {"j", R"({"jobId":"j",)" + ok_sf + R"(})", "missing_field"},
      {"j", R"({"jobId":"j",)" + ok_sf + R"(,"status":"SUCCEEDED"})", "invalid_status"},
      {"j", R"({"jobId":"j",)" + ok_sf + R"(,"status":"succeeded","attempt":-1})", "invalid_attempt"},
      {"j", R"({"jobId":"j",)" + ok_sf + R"(,"status":"succeeded","attempt":1001})", "invalid_attempt"},
      {"j", R"({"jobId":"j",)" + ok_sf + R"(,"status":"succeeded","attempt":"1"})", "invalid_attempt"},
      {"j", R"({"jobId":"j",)" + ok_sf + R"(,"status":"succeeded","worker":"a\nb"})", "invalid_worker"},
      {"j", R"({"jobId":"j",)" + ok_sf + R"(,"status":"succeeded","finishedAt":true})", "wrong_type"},
      {"j", std::string(70'000, ' '), "too_large"},
      {"j", "\xff\xfe", "invalid_utf8"},
      {"j", R"({"jobId":"j",)" + ok_sf + R"(,"status":"succeeded","attempt":1e999})", "invalid_number"},
      {"j", "", "invalid_json"},
  };
  for (const auto& c : cases) {
    auto r = Parse(c.key, c.value);
    ASSERT_FALSE(r.ok()) << c.value.value_or("<null>");
    EXPECT_EQ(r.status().reason(), c.reason) << c.value.value_or("<null>") << " -> " << r.status().ToString();
  }
}

// A report whose "error" holds `levels` nested arrays (or objects), so the document is
// levels + 1 deep.
std::string NestedReport(int levels, bool objects) {
  std::string open, close;
  for (int i = 0; i < levels; ++i) {
    open += objects ? "{\"a\":" : "[";
    close += objects ? "}" : "]";
  }
  if (objects) open += "1";
  return R"({"jobId":"j","scheduledFor":0,"status":"failed","error":)" + open + close + "}";
}

TEST(ExecutionReportTest, DeepNestingIsRejectedAsTooDeep) {
  for (const bool objects : {false, true}) {
    SCOPED_TRACE(objects ? "objects" : "arrays");
    for (const int levels : {32, 1000, 10'000}) {
      SCOPED_TRACE(levels);
      auto r = Parse("j", NestedReport(levels, objects));
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.status().code(), Status::Code::kInvalid);
      EXPECT_EQ(r.status().reason(), "too_deep") << r.status().ToString();
      EXPECT_NE(r.status().message().find("32 levels"), std::string::npos) << r.status().ToString();
    }
  }
}

TEST(ExecutionReportTest, NestingUpToTheLimitIsParsed) {
  // 31 levels inside "error" make 32 with the report itself: parsed, then refused for its type.
  auto r = Parse("j", NestedReport(31, false));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().reason(), "wrong_type") << r.status().ToString();
}

ExecutionReport Report(EpochMs sf, int32_t attempt, ExecutionStatus s, std::string error = "") {
  ExecutionReport r;
  r.job_id.push_back('j');  // not = "j": GCC 12's false -Wrestrict at -O3
  r.scheduled_for_ms = sf;
  r.attempt = attempt;
  r.status = s;
  r.error = std::move(error);
  r.finished_at = sf + 1000;
  return r;
}

constexpr auto kOk = ExecutionStatus::kSucceeded;
constexpr auto kFail = ExecutionStatus::kFailed;
constexpr auto kRun = ExecutionStatus::kRunning;

TEST(FoldJobStatsTest, CountsAndStreaks) {
  JobStats s = FoldJobStats(std::nullopt, "j", {Report(1000, 0, kFail, "e1"), Report(2000, 0, kFail, "e2")});
  EXPECT_EQ(s.total_failed, 2);
  EXPECT_EQ(s.consecutive_failures, 2);
  EXPECT_EQ(*s.last_status, kFail);
  EXPECT_EQ(s.last_scheduled_for_ms, 2000);
  EXPECT_EQ(s.last_error, "e2");
  s = FoldJobStats(s, "j", {Report(3000, 0, kOk)});
  EXPECT_EQ(s.consecutive_failures, 0);
  EXPECT_EQ(s.total_succeeded, 1);
  EXPECT_EQ(*s.last_status, kOk);
  s = FoldJobStats(s, "j", {Report(4000, 0, kFail)});
  EXPECT_EQ(s.consecutive_failures, 1);
}

TEST(FoldJobStatsTest, RunningIsIgnoredAndLateReportsDoNotRegressTheLastOutcome) {
  JobStats s = FoldJobStats(std::nullopt, "j", {Report(5000, 0, kOk), Report(6000, 0, kRun)});
  EXPECT_EQ(s.last_scheduled_for_ms, 5000);
  EXPECT_EQ(s.total_succeeded, 1);
  s = FoldJobStats(s, "j", {Report(1000, 0, kFail)});  // an old slot's failure arrives late
  EXPECT_EQ(s.total_failed, 1);
  EXPECT_EQ(*s.last_status, kOk);
  EXPECT_EQ(s.last_scheduled_for_ms, 5000);
  EXPECT_EQ(s.consecutive_failures, 0);
}

TEST(FoldJobStatsTest, RetryAttemptsOrderWithinASlot) {
  JobStats s = FoldJobStats(std::nullopt, "j",
                            {Report(1000, 1, kOk), Report(1000, 0, kFail, "first"), Report(900, 0, kFail)});
  EXPECT_EQ(*s.last_status, kOk);
  EXPECT_EQ(s.last_attempt, 1);
  EXPECT_EQ(s.consecutive_failures, 0);
  EXPECT_EQ(s.total_failed, 2);
}

TEST(FoldJobStatsTest, OrderOfTheBatchDoesNotMatter) {
  std::vector<ExecutionReport> reports = {Report(1000, 0, kFail), Report(2000, 0, kOk),
                                          Report(3000, 0, kFail), Report(3000, 1, kFail),
                                          Report(2500, 0, kRun)};
  const JobStats a = FoldJobStats(std::nullopt, "j", reports);
  std::reverse(reports.begin(), reports.end());
  const JobStats b = FoldJobStats(std::nullopt, "j", reports);
  EXPECT_EQ(a.consecutive_failures, 2);
  EXPECT_EQ(b.consecutive_failures, 2);
  EXPECT_EQ(a.last_attempt, b.last_attempt);
  EXPECT_EQ(a.total_failed, b.total_failed);
}

TEST(EncodeExecutionRecordTest, Format) {
  ExecutionRecord rec;
  rec.report = Report(*ParseIsoTime("2026-11-22T13:37:32.500Z"), 1, kFail, "bad \"thing\"");
  rec.report.worker = "w";
  rec.received_at = *ParseIsoTime("2026-11-22T13:40:00Z");
  EXPECT_EQ(
      EncodeExecutionRecord(rec),
      R"({"jobId":"j","scheduledFor":"2026-11-22T13:37:32.500Z","attempt":1,"status":"failed",)"
      R"("error":"bad \"thing\"","startedAt":null,"finishedAt":"2026-11-22T13:37:33.500Z","worker":"w",)"
      R"("receivedAt":"2026-11-22T13:40:00.000Z"})");
}

// ---- Retry policy -------------------------------------------------------------------------------

TEST(RetryDelayTest, ExponentialWithCap) {
  const RetryBackoff b{60'000, 2.0, 3'600'000};
  EXPECT_EQ(RetryDelayMs(b, 1), 60'000);
  EXPECT_EQ(RetryDelayMs(b, 2), 120'000);
  EXPECT_EQ(RetryDelayMs(b, 3), 240'000);
  EXPECT_EQ(RetryDelayMs(b, 6), 1'920'000);
  EXPECT_EQ(RetryDelayMs(b, 7), 3'600'000);  // 3'840'000 capped
  EXPECT_EQ(RetryDelayMs(b, 1000), 3'600'000);
  EXPECT_EQ(RetryDelayMs(b, 0), 60'000);
}

TEST(RetryDelayTest, ConstantAndFractionalMultipliers) {
  EXPECT_EQ(RetryDelayMs(RetryBackoff{5000, 1.0, 60'000}, 50), 5000);
  EXPECT_EQ(RetryDelayMs(RetryBackoff{1000, 1.5, 60'000}, 3), 2250);
  EXPECT_EQ(RetryDelayMs(RetryBackoff{90'000, 2.0, 60'000}, 1), 60'000);  // initial above the cap
}

TEST(RetryDelayTest, MonotoneAndBoundedForEveryAttempt) {
  for (double m : {1.0, 1.1, 2.0, 3.0, 10.0, 1e6}) {
    const RetryBackoff b{1000, m, 86'400'000};
    int64_t prev = 0;
    for (int32_t a = 1; a <= 2000; ++a) {
      const int64_t d = RetryDelayMs(b, a);
      EXPECT_GE(d, prev);
      EXPECT_LE(d, b.max_ms);
      EXPECT_GE(d, b.initial_ms);
      prev = d;
    }
  }
}

TEST(RetrySupersededTest, Rules) {
  EXPECT_FALSE(RetrySuperseded(1000, std::nullopt));
  EXPECT_FALSE(RetrySuperseded(1000, 999));    // an older slot's success says nothing
  EXPECT_TRUE(RetrySuperseded(1000, 1000));    // the slot itself succeeded (another attempt)
  EXPECT_TRUE(RetrySuperseded(1000, 61'000));  // a later slot succeeded
}

TEST(PlanRetryTest, UpToMaxRetriesAtTheBackoffTimes) {
  const RetryBackoff b{60'000, 2.0, 3'600'000};
  auto p1 = PlanRetry(3, b, 0, 10'000, 5000, std::nullopt);
  ASSERT_TRUE(p1);
  EXPECT_EQ(p1->attempt, 1);
  EXPECT_EQ(p1->run_at_ms, 70'000);
  auto p3 = PlanRetry(3, b, 2, 10'000, 5000, std::nullopt);
  ASSERT_TRUE(p3);
  EXPECT_EQ(p3->attempt, 3);
  EXPECT_EQ(p3->run_at_ms, 250'000);
  EXPECT_FALSE(PlanRetry(3, b, 3, 10'000, 5000, std::nullopt));  // no retries left
  EXPECT_FALSE(PlanRetry(0, b, 0, 10'000, 5000, std::nullopt));  // default: no retries
  EXPECT_FALSE(PlanRetry(3, b, 0, 10'000, 5000, 65'000));        // superseded
  EXPECT_FALSE(PlanRetry(3, b, -1, 10'000, 5000, std::nullopt));
}

}  // namespace
}  // namespace belfry
