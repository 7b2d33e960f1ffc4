// Hermetic: BatchPublication tracks one batch's records until every one is acknowledged.
#include "kafka/batch_publication.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace belfry {
namespace {

const std::string kDlq = "dlq";
const std::string kResults = "results";

OutgoingRecord Record(const std::string* topic, std::string value, bool is_dlq) {
  OutgoingRecord r;
  r.topic = topic;
  r.key = "k";
  r.value = std::move(value);
  r.is_dlq = is_dlq;
  return r;
}

BatchPublication Publication(uint64_t ticket, std::vector<OutgoingRecord> records) {
  return BatchPublication(ticket, std::move(records), Backoff(BackoffPolicy{}, 1));
}

TEST(BatchPublicationTest, ABatchWithoutRecordsIsDeliveredAtOnce) {
  BatchPublication p = Publication(1, {});
  EXPECT_TRUE(p.AllReported());
  EXPECT_TRUE(p.Delivered());
  EXPECT_FALSE(p.Failed());
}

TEST(BatchPublicationTest, DeliveredOnlyOnceEveryRecordIsAcknowledged) {
  BatchPublication p = Publication(1, {Record(&kDlq, "a", true), Record(&kResults, "b", false)});
  EXPECT_FALSE(p.AllReported());
  EXPECT_FALSE(p.Delivered());
  p.OnReport(1, RdKafka::ERR_NO_ERROR);
  EXPECT_FALSE(p.AllReported());
  EXPECT_FALSE(p.Delivered());
  EXPECT_FALSE(p.Failed());
  p.OnReport(0, RdKafka::ERR_NO_ERROR);
  EXPECT_TRUE(p.AllReported());
  EXPECT_TRUE(p.Delivered());
  EXPECT_FALSE(p.Failed());
}

TEST(BatchPublicationTest, IgnoresASecondReportAndUnknownIndices) {
  BatchPublication p = Publication(1, {Record(&kDlq, "a", true), Record(&kResults, "b", false)});
  p.OnReport(0, RdKafka::ERR__MSG_TIMED_OUT);
  p.OnReport(0, RdKafka::ERR_NO_ERROR);  // late: record 0 has its answer
  p.OnReport(7, RdKafka::ERR_NO_ERROR);
  EXPECT_FALSE(p.AllReported());
  p.OnReport(1, RdKafka::ERR_NO_ERROR);
  EXPECT_TRUE(p.Failed());
  EXPECT_FALSE(p.Delivered());
}

TEST(BatchPublicationTest, AnInProgressReportCountsAsAFailure) {
  BatchPublication p = Publication(1, {Record(&kResults, "b", false)});
  p.OnReport(0, RdKafka::ERR__IN_PROGRESS);
  EXPECT_TRUE(p.AllReported());
  EXPECT_TRUE(p.Failed());
  EXPECT_EQ(p.PrepareRetry().first_error, RdKafka::ERR__FAIL);
}

TEST(BatchPublicationTest, RetriesOnlyTheFailedRecords) {
  BatchPublication p =
      Publication(1, {Record(&kDlq, "a", true), Record(&kResults, "b", false), Record(&kResults, "c", false)});
  p.OnReport(0, RdKafka::ERR_NO_ERROR);
  p.OnReport(1, RdKafka::ERR__MSG_TIMED_OUT);
  p.OnReport(2, RdKafka::ERR__TRANSPORT);
  ASSERT_TRUE(p.Failed());
  const BatchPublication::Retry retry = p.PrepareRetry();
  EXPECT_EQ(retry.indices, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(retry.first_error, RdKafka::ERR__MSG_TIMED_OUT);
  EXPECT_EQ(p.attempt(), 1);
  p.StartRetry(retry);
  EXPECT_EQ(p.attempt(), 2);
  EXPECT_FALSE(p.AllReported());
  p.OnReport(1, RdKafka::ERR_NO_ERROR);
  EXPECT_FALSE(p.AllReported());
  p.OnReport(2, RdKafka::ERR_NO_ERROR);
  EXPECT_TRUE(p.Delivered());
  EXPECT_EQ(p.record(1).value, std::optional<std::string>("b"));
}

TEST(BatchPublicationTest, ADlqRecordTooLargeLosesItsValueOnRetry) {
  BatchPublication p = Publication(
      1, {Record(&kDlq, std::string(10, 'x'), true), Record(&kResults, "big", false), Record(&kDlq, "y", true)});
  p.OnReport(0, RdKafka::ERR_MSG_SIZE_TOO_LARGE);
  p.OnReport(1, RdKafka::ERR_MSG_SIZE_TOO_LARGE);
  p.OnReport(2, RdKafka::ERR__MSG_TIMED_OUT);
  const BatchPublication::Retry retry = p.PrepareRetry();
  EXPECT_EQ(retry.indices, (std::vector<size_t>{0, 1, 2}));
  // The DLQ record keeps its key and headers, without its value.
  EXPECT_EQ(p.record(0).value, std::optional<std::string>(""));
  ASSERT_EQ(p.record(0).headers.size(), 1u);
  EXPECT_EQ(p.record(0).headers[0].key, kDlqValueDroppedHeader);
  EXPECT_EQ(p.record(0).headers[0].value, std::optional<std::string>("10 bytes"));
  // An outcome is not someone else's value: it is retried whole.
  EXPECT_EQ(p.record(1).value, std::optional<std::string>("big"));
  EXPECT_TRUE(p.record(1).headers.empty());
  // A DLQ record that failed for another reason keeps its value.
  EXPECT_EQ(p.record(2).value, std::optional<std::string>("y"));
  EXPECT_TRUE(p.record(2).headers.empty());
}

TEST(BatchPublicationTest, TagsMatchTheirBatchAndRecord) {
  const BatchPublication p = Publication(42, {Record(&kResults, "a", false), Record(&kResults, "b", false)});
  const BatchPublication other = Publication(43, {});
  const BatchPublication::Tag tag = BatchPublication::ParseTag(p.TagOf(1));
  EXPECT_EQ(tag.index, 1u);
  EXPECT_TRUE(p.Matches(tag));
  EXPECT_FALSE(other.Matches(tag));
  // Only the ticket's low 32 bits travel in the tag.
  const BatchPublication wrapped = Publication((uint64_t{1} << 32) + 42, {});
  EXPECT_TRUE(wrapped.Matches(tag));
  EXPECT_EQ(BatchPublication::ParseTag(p.TagOf(0)).index, 0u);
}

}  // namespace
}  // namespace belfry
