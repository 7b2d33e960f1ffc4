#include "kafka/trigger_error_class.h"

#include <gtest/gtest.h>

#include <string>

namespace belfry {
namespace {

TEST(TriggerErrorClassTest, RecordErrorsBelongToOneRecord) {
  const struct {
    rd_kafka_resp_err_t err;
    const char* reason;
  } cases[] = {
      {RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, "message_too_large"},
      {RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE, "message_too_large"},
      {RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE, "message_too_large"},
      {RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, "topic_authorization"},
      {RD_KAFKA_RESP_ERR_INVALID_RECORD, "invalid_record"},
      {RD_KAFKA_RESP_ERR_INVALID_MSG, "invalid_record"},
      {RD_KAFKA_RESP_ERR_POLICY_VIOLATION, "policy_violation"},
      {RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION, "invalid_topic"},
      {RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC, "unknown_topic"},
      {RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, "unknown_topic"},
  };
  for (const auto& c : cases) {
    const TriggerErrorClass got = ClassifyTriggerError(c.err);
    EXPECT_EQ(got.kind, TriggerErrorKind::kRecord) << rd_kafka_err2name(c.err);
    EXPECT_EQ(std::string(got.reason), c.reason) << rd_kafka_err2name(c.err);
  }
}

TEST(TriggerErrorClassTest, EverythingElseIsABrokerError) {
  for (rd_kafka_resp_err_t err :
       {RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN,
        RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
        RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR__PURGE_QUEUE, RD_KAFKA_RESP_ERR__PURGE_INFLIGHT,
        RD_KAFKA_RESP_ERR__FATAL, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS, RD_KAFKA_RESP_ERR_NO_ERROR}) {
    EXPECT_EQ(ClassifyTriggerError(err).kind, TriggerErrorKind::kBroker) << rd_kafka_err2name(err);
  }
}

}  // namespace
}  // namespace belfry
