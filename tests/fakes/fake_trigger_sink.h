// FakeTriggerSink: records every trigger it is given; can be told to fail batches.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "belfry/trigger_sink.h"

namespace belfry {

struct SentTrigger {
  std::string job_id;
  std::string topic;
  std::string key;
  std::string value;  // the encoded JSON value
  int32_t interval_minutes = 0;
  EpochMs scheduled_for_ms = 0;
};

class FakeTriggerSink final : public TriggerSink {
 public:
  std::unique_ptr<TriggerBatch> NewBatch() override;

  std::vector<SentTrigger> sent() const;
  void Clear();
  // The next n batches fail in Finish() (their triggers are still recorded as "attempted").
  void FailNextBatches(int n);

 private:
  friend class FakeTriggerBatch;
  mutable std::mutex mu_;
  std::vector<SentTrigger> sent_;
  int fail_batches_ = 0;
};

}  // namespace belfry
