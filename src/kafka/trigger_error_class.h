// TriggerErrorClass: which librdkafka errors on a trigger are a record error (only that
// (job, slot) fails and is dead-lettered) and which are a broker error (the shard-minute is
// retried). docs/reliability.md, "Undeliverable triggers". Private to src/kafka.
#pragma once

#include <librdkafka/rdkafka.h>

#include "belfry/trigger_sink.h"

namespace belfry {

struct TriggerErrorClass {
  TriggerErrorKind kind = TriggerErrorKind::kBroker;
  const char* reason = "broker";  // the belfry_triggers_refused_total label for a record error
};

// kRecord iff producing the same message to the same topic again cannot succeed until an
// operator changes the topic or the job: the message (or its record batch) is over the topic's
// size limit, the topic denies writes, the broker rejects the record or a policy refuses it, the
// topic name is invalid, or the topic is unknown after librdkafka's bounded metadata wait
// (topic.metadata.propagation.max.ms; reached only when auto-creation is off). Everything else
// (ERR_NO_ERROR included) is kBroker. Pure.
TriggerErrorClass ClassifyTriggerError(rd_kafka_resp_err_t err);

}  // namespace belfry
