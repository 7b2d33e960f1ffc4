#include "fakes/fake_trigger_sink.h"

#include <utility>

#include "core/trigger_encoder.h"

namespace belfry {

class FakeTriggerBatch final : public TriggerBatch {
 public:
  FakeTriggerBatch(FakeTriggerSink* sink, bool fail, int64_t number)
      : sink_(sink), fail_(fail), number_(number) {}
  ~FakeTriggerBatch() override {
    std::lock_guard<std::mutex> lock(sink_->mu_);
    sink_->waiting_.erase(number_);
  }
  void Add(const TriggerView& t) override {
    SentTrigger s{std::string(t.job_id), std::string(t.topic), std::string(t.key), {},
                  t.interval_minutes,    t.scheduled_for_ms};
    EncodeTriggerValue(t, &s.value);
    pending_.push_back(std::move(s));
  }
  Status Finish() override {
    std::unique_lock<std::mutex> lock(sink_->mu_);
    sink_->acks_cv_.wait(lock, [this] { return !sink_->hold_; });
    if (fail_) return Status::Retryable("injected broker failure");
    for (SentTrigger& s : pending_) sink_->sent_.push_back(std::move(s));
    pending_.clear();
    return Status::Ok();
  }
  bool Done() override {
    std::lock_guard<std::mutex> lock(sink_->mu_);
    return !sink_->hold_;
  }
  void NotifyWhenDone(std::function<void()> fn) override {
    std::lock_guard<std::mutex> lock(sink_->mu_);
    if (!sink_->hold_) {
      fn();
    } else {
      sink_->waiting_[number_] = std::move(fn);
    }
  }

 private:
  FakeTriggerSink* sink_;
  bool fail_;
  int64_t number_;
  std::vector<SentTrigger> pending_;
};

std::unique_ptr<TriggerBatch> FakeTriggerSink::NewBatch() {
  std::lock_guard<std::mutex> lock(mu_);
  const bool fail = fail_batches_ > 0;
  if (fail) --fail_batches_;
  return std::make_unique<FakeTriggerBatch>(this, fail, next_batch_++);
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

void FakeTriggerSink::HoldAcks() {
  std::lock_guard<std::mutex> lock(mu_);
  hold_ = true;
}

void FakeTriggerSink::ReleaseAcks() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = false;
    // As in the real sink, callbacks run under the batch's (here: the sink's) lock.
    for (auto& [number, fn] : waiting_) fn();
    waiting_.clear();
  }
  acks_cv_.notify_all();
}

int64_t FakeTriggerSink::batches_created() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_batch_;
}

}  // namespace belfry
