#include "kafka/delivery_error.h"

namespace belfry {

SendStatus ClassifyDeliveryError(RdKafka::ErrorCode err) {
  switch (err) {
    case RdKafka::ERR_NO_ERROR:
      return SendStatus::kSuccess;
    case RdKafka::ERR_TOPIC_AUTHORIZATION_FAILED:
    case RdKafka::ERR_TOPIC_EXCEPTION:  // invalid topic name
    case RdKafka::ERR_MSG_SIZE_TOO_LARGE:
    case RdKafka::ERR_INVALID_MSG_SIZE:
    case RdKafka::ERR_RECORD_LIST_TOO_LARGE:
    case RdKafka::ERR_INVALID_RECORD:
    case RdKafka::ERR_INVALID_MSG:
    case RdKafka::ERR_POLICY_VIOLATION:
    case RdKafka::ERR__INVALID_ARG:
    case RdKafka::ERR__KEY_SERIALIZATION:
    case RdKafka::ERR__VALUE_SERIALIZATION:
      return SendStatus::kErrorNonRetryable;
    default:
      return SendStatus::kErrorRetryable;
  }
}

Status DeliveryStatus(RdKafka::ErrorCode err, const std::string& topic) {
  switch (ClassifyDeliveryError(err)) {
    case SendStatus::kSuccess:
      return Status::Ok();
    case SendStatus::kErrorNonRetryable:
      return Status::Invalid("kafka_delivery", "topic '" + topic + "': " + RdKafka::err2str(err));
    case SendStatus::kErrorRetryable:
      break;
  }
  return Status::Retryable("kafka delivery to topic '" + topic + "' failed: " + RdKafka::err2str(err));
}

}  // namespace belfry
