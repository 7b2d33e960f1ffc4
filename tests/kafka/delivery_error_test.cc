// Hermetic: how librdkafka errors map onto SendStatus and Status.
#include "kafka/delivery_error.h"

#include <gtest/gtest.h>

namespace belfry {
namespace {

TEST(ClassifyDeliveryErrorTest, NoErrorIsSuccess) {
  EXPECT_EQ(ClassifyDeliveryError(RdKafka::ERR_NO_ERROR), SendStatus::kSuccess);
}

TEST(ClassifyDeliveryErrorTest, TopicAndMessageProblemsArePermanent) {
  for (RdKafka::ErrorCode err :
       {RdKafka::ERR_TOPIC_AUTHORIZATION_FAILED, RdKafka::ERR_TOPIC_EXCEPTION,
        RdKafka::ERR_MSG_SIZE_TOO_LARGE, RdKafka::ERR_INVALID_MSG_SIZE, RdKafka::ERR_RECORD_LIST_TOO_LARGE,
        RdKafka::ERR_INVALID_RECORD, RdKafka::ERR_POLICY_VIOLATION, RdKafka::ERR__INVALID_ARG}) {
    EXPECT_EQ(ClassifyDeliveryError(err), SendStatus::kErrorNonRetryable) << RdKafka::err2str(err);
  }
}

TEST(ClassifyDeliveryErrorTest, BrokerAndTransportFaultsAreRetryable) {
  for (RdKafka::ErrorCode err : {RdKafka::ERR__MSG_TIMED_OUT,
                                 RdKafka::ERR__TRANSPORT,
                                 RdKafka::ERR__ALL_BROKERS_DOWN,
                                 RdKafka::ERR__QUEUE_FULL,
                                 RdKafka::ERR__PURGE_QUEUE,
                                 RdKafka::ERR__PURGE_INFLIGHT,
                                 RdKafka::ERR__FATAL,
                                 RdKafka::ERR__TIMED_OUT,
                                 RdKafka::ERR_NOT_LEADER_FOR_PARTITION,
                                 RdKafka::ERR_LEADER_NOT_AVAILABLE,
                                 RdKafka::ERR_REQUEST_TIMED_OUT,
                                 RdKafka::ERR_NOT_ENOUGH_REPLICAS,
                                 RdKafka::ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                                 RdKafka::ERR_UNKNOWN_TOPIC_OR_PART,
                                 RdKafka::ERR__UNKNOWN_TOPIC,
                                 RdKafka::ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                                 RdKafka::ERR_CLUSTER_AUTHORIZATION_FAILED,
                                 RdKafka::ERR_KAFKA_STORAGE_ERROR,
                                 RdKafka::ERR_NETWORK_EXCEPTION,
                                 RdKafka::ERR_THROTTLING_QUOTA_EXCEEDED}) {
    EXPECT_EQ(ClassifyDeliveryError(err), SendStatus::kErrorRetryable) << RdKafka::err2str(err);
  }
}

TEST(DeliveryStatusTest, MapsToStatusCodesAndNamesTheTopic) {
  EXPECT_TRUE(DeliveryStatus(RdKafka::ERR_NO_ERROR, "t").ok());

  const Status permanent = DeliveryStatus(RdKafka::ERR_TOPIC_AUTHORIZATION_FAILED, "orders.poll");
  EXPECT_EQ(permanent.code(), Status::Code::kInvalid);
  EXPECT_EQ(permanent.reason(), "kafka_delivery");
  EXPECT_NE(permanent.message().find("orders.poll"), std::string::npos);

  const Status transient = DeliveryStatus(RdKafka::ERR__MSG_TIMED_OUT, "orders.poll");
  EXPECT_TRUE(transient.retryable());
  EXPECT_NE(transient.message().find("orders.poll"), std::string::npos);
}

}  // namespace
}  // namespace belfry
