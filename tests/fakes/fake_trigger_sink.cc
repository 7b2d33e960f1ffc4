#include "fakes/fake_trigger_sink.h"

#include <algorithm>
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
    sink_->waiting_until_us_.erase(number_);
  }
  void Add(const TriggerView& t) override {
    SentTrigger s{std::string(t.job_id), std::string(t.topic), std::string(t.key), {},
                  t.interval_minutes,    t.scheduled_for_ms};
    EncodeTriggerValue(t, &s.value);
    {
      std::lock_guard<std::mutex> lock(sink_->mu_);
      if (sink_->clock_ != nullptr) {
        const int64_t now_us = sink_->clock_->NowMs() * 1000;
        sink_->next_ack_us_ = std::max(sink_->next_ack_us_, now_us) + 1'000'000 / sink_->per_second_;
        last_ack_us_ = sink_->next_ack_us_;
        s.acked_ms = (last_ack_us_ + 999) / 1000;
      }
    }
    pending_.push_back(std::move(s));
    pending_headers_.push_back({{"belfry-job-id", std::string(t.job_id)},
                                {"belfry-scheduled-for", std::to_string(t.scheduled_for_ms)}});
  }
  void Resend(const TriggerFailure& f) override {
    {
      std::lock_guard<std::mutex> lock(sink_->mu_);
      ++sink_->resends_;
    }
    SentTrigger s{f.job_id, f.topic, f.key, f.value, 0, f.scheduled_for_ms};
    pending_.push_back(std::move(s));
    pending_headers_.push_back(f.headers);
  }
  std::vector<TriggerFailure> Failures() override { return failures_; }
  Status Finish() override {
    std::unique_lock<std::mutex> lock(sink_->mu_);
    if (sink_->hold_) {
      ++sink_->finishes_held_;
      sink_->acks_cv_.wait(lock, [this] { return !sink_->hold_; });
      --sink_->finishes_held_;
    }
    if (fail_) return Status::Retryable("injected broker failure");
    // Record errors: a refused job's triggers, and with spoils_batch its topic's batch-mates.
    std::map<std::string, std::string> spoiled;  // topic -> reason
    for (const SentTrigger& s : pending_) {
      auto it = sink_->refused_jobs_.find(s.job_id);
      if (it != sink_->refused_jobs_.end() && it->second.second) spoiled[s.topic] = it->second.first;
    }
    for (size_t i = 0; i < pending_.size(); ++i) {
      SentTrigger& s = pending_[i];
      auto it = sink_->refused_jobs_.find(s.job_id);
      auto sp = spoiled.find(s.topic);
      auto once = sink_->fail_once_.find(s.job_id);
      auto fail = [&](TriggerErrorKind kind, std::string reason, std::string error) {
        TriggerFailure f;
        f.kind = kind;
        f.reason = std::move(reason);
        f.error = std::move(error);
        f.job_id = s.job_id;
        f.topic = s.topic;
        f.key = s.key;
        f.value = s.value;
        f.scheduled_for_ms = s.scheduled_for_ms;
        f.headers = pending_headers_[i];
        failures_.push_back(std::move(f));
      };
      if (once != sink_->fail_once_.end() && once->second > 0) {
        --once->second;
        fail(TriggerErrorKind::kBroker, "broker", "injected broker error on one record");
        continue;
      }
      if (it == sink_->refused_jobs_.end() && sp == spoiled.end()) {
        sink_->sent_.push_back(std::move(s));
        continue;
      }
      const std::string reason = it != sink_->refused_jobs_.end() ? it->second.first : sp->second;
      fail(it != sink_->refused_jobs_.end() ? sink_->refused_kind_[s.job_id] : TriggerErrorKind::kRecord, reason,
           "injected record error: " + reason);
    }
    pending_.clear();
    pending_headers_.clear();
    for (const TriggerFailure& f : failures_) {
      if (f.kind == TriggerErrorKind::kBroker) return Status::Retryable(f.error);
    }
    if (!failures_.empty()) return Status::Invalid("kafka_delivery", failures_.front().error);
    return Status::Ok();
  }
  bool Done() override {
    std::lock_guard<std::mutex> lock(sink_->mu_);
    return DoneLocked();
  }
  void NotifyWhenDone(std::function<void()> fn) override {
    std::lock_guard<std::mutex> lock(sink_->mu_);
    if (DoneLocked()) {
      fn();
    } else {
      sink_->waiting_[number_] = std::move(fn);
      if (sink_->clock_ != nullptr) sink_->waiting_until_us_[number_] = last_ack_us_;
    }
  }

 private:
  bool DoneLocked() const {
    if (sink_->hold_) return false;
    return sink_->clock_ == nullptr || sink_->clock_->NowMs() * 1000 >= last_ack_us_;
  }

  FakeTriggerSink* sink_;
  bool fail_;
  int64_t number_;
  int64_t last_ack_us_ = 0;
  std::vector<SentTrigger> pending_;
  std::vector<std::vector<std::pair<std::string, std::string>>> pending_headers_;
  std::vector<TriggerFailure> failures_;
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

void FakeTriggerSink::RefuseJob(const std::string& job_id, const std::string& reason, bool spoils_batch,
                                TriggerErrorKind kind) {
  std::lock_guard<std::mutex> lock(mu_);
  refused_jobs_[job_id] = {reason, spoils_batch};
  refused_kind_[job_id] = kind;
}

void FakeTriggerSink::FailJobsOnce(const std::vector<std::string>& job_ids) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& id : job_ids) ++fail_once_[id];
}

int64_t FakeTriggerSink::resends() const {
  std::lock_guard<std::mutex> lock(mu_);
  return resends_;
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
    waiting_until_us_.clear();
  }
  acks_cv_.notify_all();
}

void FakeTriggerSink::SetDeliveryRate(const Clock* clock, int64_t per_second) {
  std::lock_guard<std::mutex> lock(mu_);
  clock_ = clock;
  per_second_ = per_second;
}

void FakeTriggerSink::Poll() {
  std::lock_guard<std::mutex> lock(mu_);
  if (clock_ == nullptr || hold_) return;
  const int64_t now_us = clock_->NowMs() * 1000;
  for (auto it = waiting_until_us_.begin(); it != waiting_until_us_.end();) {
    if (it->second > now_us) {
      ++it;
      continue;
    }
    auto fn = waiting_.find(it->first);
    if (fn != waiting_.end()) {
      fn->second();  // under the sink's lock, as ReleaseAcks runs them
      waiting_.erase(fn);
    }
    it = waiting_until_us_.erase(it);
  }
}

int64_t FakeTriggerSink::batches_created() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_batch_;
}

int64_t FakeTriggerSink::finishes_held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return finishes_held_;
}

}  // namespace belfry
