// DeliveryError: how a librdkafka produce or delivery error maps onto belfry's Status.
// Private to src/kafka.
#pragma once

#include <librdkafka/rdkafkacpp.h>

#include <string>

#include "belfry/status.h"

namespace belfry {

enum class SendStatus { kSuccess, kErrorRetryable, kErrorNonRetryable };

// kErrorNonRetryable iff sending the same message to the same topic again cannot succeed
// without an operator changing something about that topic or message (authorization on the
// topic, an invalid topic, a message over the size limit). Everything else that is not
// ERR_NO_ERROR (timeouts, broker faults, purges, a fatal producer error) is retryable.
SendStatus ClassifyDeliveryError(RdKafka::ErrorCode err);

// Ok for ERR_NO_ERROR; otherwise Invalid(reason "kafka_delivery") or Retryable, per
// ClassifyDeliveryError, with a message naming `topic` and the librdkafka error.
Status DeliveryStatus(RdKafka::ErrorCode err, const std::string& topic);

}  // namespace belfry
