#include "fakes/fake_trigger_sink.h"

#include "core/trigger_encoder.h"

namespace belfry {

class FakeTriggerBatch final : public TriggerBatch {
 public:
  FakeTriggerBatch(FakeTriggerSink* sink, bool fail) : sink_(sink), fail_(fail) {}
  void Add(const TriggerView& t) override {
    SentTrigger s{std::string(t.job_id), std::string(t.topic), std::string(t.key), {}, t.interval_minutes,
                  t.scheduled_for_ms};
    EncodeTriggerValue(t, &s.value);
    pending_.push_back(std::move(s));
  }
  Status Finish() override {
    if (fail_) return Status::Retryable("injected broker failure");
    std::lock_guard<std::mutex> lock(sink_->mu_);
    for (SentTrigger& s : pending_) sink_->sent_.push_back(std::move(s));
    return Status::Ok();
  }

 private:
  FakeTriggerSink* sink_;
  bool fail_;
  std::vector<SentTrigger> pending_;
};

std::unique_ptr<TriggerBatch> FakeTriggerSink::NewBatch() {
  std::lock_guard<std::mutex> lock(mu_);
  const bool fail = fail_batches_ > 0;
  if (fail) --fail_batches_;
  return std::make_unique<FakeTriggerBatch>(this, fail);
}

std::vector<SentTrigger> FakeTriggerSink::sent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sent_;
}

void FakeTriggerSink::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  sent_.clear();
}

void FakeTriggerSink::FailNextBatches(int n) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_batches_ = n;
}

}  // namespace belfry
