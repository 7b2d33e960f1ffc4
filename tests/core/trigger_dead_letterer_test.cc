#include "core/trigger_dead_letterer.h"

#include <gtest/gtest.h>

#include "fakes/fake_job_store.h"
#include "fakes/fake_trigger_sink.h"

namespace belfry {
namespace {

TriggerFailure Refused() {
  TriggerFailure f;
  f.kind = TriggerErrorKind::kRecord;
  f.reason = "message_too_large";
  f.error = "Broker: Message size too large";
  f.job_id = "j1";
  f.topic = "out.small";
  f.key = "custom-key";
  f.value = R"({"jobId":"j1"})";
  f.scheduled_for_ms = 1'700'000'000'000;
  f.headers = {{"belfry-job-id", "j1"}, {"belfry-scheduled-for", "1700000000000"}};
  return f;
}

TEST(TriggerDeadLetterTest, KeepsTheTriggerAndNamesTheErrorAndTheTarget) {
  const TriggerFailure letter = TriggerDeadLetter(Refused(), "belfry.triggers.dlq");
  EXPECT_EQ(letter.topic, "belfry.triggers.dlq");
  EXPECT_EQ(letter.key, "j1") << "keyed by job, so a job's dead letters stay in order";
  EXPECT_EQ(letter.value, Refused().value);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"belfry-job-id", "j1"},
      {"belfry-scheduled-for", "1700000000000"},
      {"belfry-error", "message_too_large: Broker: Message size too large"},
      {"belfry-error-reason", "message_too_large"},
      {"belfry-target-topic", "out.small"}};
  EXPECT_EQ(letter.headers, want);
}

TEST(TriggerDeadLettererTest, SendsTheDeadLetterThenRecordsTheJobsLastDeliveryError) {
  FakeTriggerSink sink;
  FakeJobStore store;
  TriggerDeadLetterer letterer(sink, "t.dlq", &store);
  ASSERT_TRUE(letterer.Record(Refused(), 1'700'000'000'500).ok());
  ASSERT_EQ(sink.sent().size(), 1u);
  EXPECT_EQ(sink.sent()[0].topic, "t.dlq");
  EXPECT_EQ(sink.sent()[0].job_id, "j1");
  const auto errors = store.delivery_errors();
  ASSERT_EQ(errors.count("j1"), 1u);
  EXPECT_EQ(errors.at("j1").topic, "out.small");
  EXPECT_EQ(errors.at("j1").slot_ms, 1'700'000'000'000);
  EXPECT_EQ(errors.at("j1").at_ms, 1'700'000'000'500);
  EXPECT_EQ(errors.at("j1").error, "Broker: Message size too large");
}

TEST(TriggerDeadLettererTest, AnUnsentDeadLetterRecordsNothingAndIsRetryable) {
  FakeTriggerSink sink;
  FakeJobStore store;
  TriggerDeadLetterer letterer(sink, "t.dlq", &store);
  sink.FailNextBatches(1);
  const Status st = letterer.Record(Refused(), 1);
  EXPECT_TRUE(st.retryable()) << st.ToString();
  EXPECT_TRUE(store.delivery_errors().empty());
}

// Issue 33 §1: a refusal whose dead letter went out but whose last error could not be written
// fails the shard-minute; its retry refuses the trigger again and must not send a second letter.
TEST(TriggerDeadLettererTest, ARetryAfterAFailedWriteOnlyWritesAndSendsNoSecondLetter) {
  FakeTriggerSink sink;
  FakeJobStore store;
  TriggerDeadLetterer letterer(sink, "t.dlq", &store);
  store.FailDeliveryErrors(1);
  EXPECT_TRUE(letterer.Record(Refused(), 1).retryable());
  ASSERT_EQ(sink.sent().size(), 1u);
  ASSERT_TRUE(letterer.Record(Refused(), 2).ok());
  EXPECT_EQ(sink.sent().size(), 1u) << "one dead letter per (job, slot)";
  ASSERT_EQ(store.delivery_errors().count("j1"), 1u);
  EXPECT_EQ(store.delivery_errors().at("j1").at_ms, 2);
  // Another slot of the same job is a new refusal: its own letter.
  TriggerFailure next = Refused();
  next.scheduled_for_ms += 60'000;
  ASSERT_TRUE(letterer.Record(next, 3).ok());
  EXPECT_EQ(sink.sent().size(), 2u);
  // A later refusal of the first slot again (a takeover repeating the minute) is sent again.
  ASSERT_TRUE(letterer.Record(Refused(), 4).ok());
  EXPECT_EQ(sink.sent().size(), 3u);
}

// The retry may run on another firing worker, with its own letterer: the node's letterers share
// what was sent and not recorded.
TEST(TriggerDeadLettererTest, AnotherWorkersRetrySendsNoSecondLetter) {
  FakeTriggerSink sink;
  FakeJobStore store_a, store_b;
  UnrecordedDeadLetters shared;
  TriggerDeadLetterer a(sink, "t.dlq", &store_a, &shared);
  TriggerDeadLetterer b(sink, "t.dlq", &store_b, &shared);
  store_a.FailDeliveryErrors(1);
  EXPECT_FALSE(a.Record(Refused(), 1).ok());
  ASSERT_TRUE(b.Record(Refused(), 2).ok());
  EXPECT_EQ(sink.sent().size(), 1u);
  EXPECT_EQ(store_b.delivery_errors().count("j1"), 1u);
}

}  // namespace
}  // namespace belfry
