#include "kafka/trigger_error_class.h"

namespace belfry {

TriggerErrorClass ClassifyTriggerError(rd_kafka_resp_err_t err) {
  constexpr TriggerErrorKind kRecord = TriggerErrorKind::kRecord;
  switch (err) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
      return {kRecord, "message_too_large"};
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
      return {kRecord, "topic_authorization"};
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
    case RD_KAFKA_RESP_ERR__KEY_SERIALIZATION:
    case RD_KAFKA_RESP_ERR__VALUE_SERIALIZATION:
      return {kRecord, "invalid_record"};
    case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
      return {kRecord, "policy_violation"};
    case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
    case RD_KAFKA_RESP_ERR__INVALID_ARG:
      return {kRecord, "invalid_topic"};
    // librdkafka reports these only once the topic stayed unknown for
    // topic.metadata.propagation.max.ms: with auto-creation on, the broker creates it instead.
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
      return {kRecord, "unknown_topic"};
    default:
      return {};
  }
}

}  // namespace belfry
