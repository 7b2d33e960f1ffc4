#include "core/trigger_encoder.h"

#include <gtest/gtest.h>
#include <simdjson.h>

namespace belfry {
namespace {

TEST(TriggerEncoderTest, ProducesDesignFormat) {
  TriggerView t;
  t.job_id = "shipment-42-poll";
  t.topic = "tracking.poll";
  t.key = "shipment-42";
  t.details_json = R"({"shipmentId":42})";
  t.interval_minutes = 15;
  t.scheduled_for_ms = 1795354652500LL;  // 2026-11-22T13:37:32.500Z
  std::string out;
  EncodeTriggerValue(t, &out);
  EXPECT_EQ(out,
            R"({"jobId":"shipment-42-poll","scheduledFor":"2026-11-22T13:37:32.500Z","intervalMinutes":15,)"
            R"("jobDetails":{"shipmentId":42}})");
  EXPECT_EQ(ScheduledForHeader(t.scheduled_for_ms), "1795354652500");
}

TEST(TriggerEncoderTest, RetriesAndManualFiresSayWhatTheyAre) {
  TriggerView t;
  t.job_id = "j";
  t.details_json = "{}";
  t.interval_minutes = 5;
  t.scheduled_for_ms = 1795354652500LL;
  t.manual = "backfill";
  std::string out;
  EncodeTriggerValue(t, &out);
  EXPECT_EQ(out, R"({"jobId":"j","scheduledFor":"2026-11-22T13:37:32.500Z","intervalMinutes":5,"manual":"backfill",)"
                 R"("jobDetails":{}})");
  t.attempt = 2;
  EncodeTriggerValue(t, &out);
  EXPECT_EQ(out, R"({"jobId":"j","scheduledFor":"2026-11-22T13:37:32.500Z","intervalMinutes":5,"attempt":2,)"
                 R"("manual":"backfill","jobDetails":{}})");
}

TEST(TriggerEncoderTest, EscapesIdAndReusesBuffer) {
  TriggerView t;
  t.job_id = "we\"ird\\id\x01";
  t.details_json = "";
  t.interval_minutes = 1;
  t.scheduled_for_ms = 0;
  std::string out = "garbage that must be cleared";
  EncodeTriggerValue(t, &out);
  EXPECT_EQ(out, R"({"jobId":"we\"ird\\id\u0001","scheduledFor":"1970-01-01T00:00:00.000Z","intervalMinutes":1,)"
                 R"("jobDetails":{}})");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(out).get(doc), simdjson::SUCCESS);
  std::string_view id;
  ASSERT_EQ(doc["jobId"].get(id), simdjson::SUCCESS);
  EXPECT_EQ(id, "we\"ird\\id\x01");
}

}  // namespace
}  // namespace belfry
