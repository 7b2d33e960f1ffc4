#include "kafka/kafka_trigger_sink.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "core/topic_policy.h"
#include "core/trigger_encoder.h"
#include "kafka/delivery_error.h"
#include "kafka/kafka_client_config.h"

namespace belfry {
namespace {

constexpr char kJobIdHeader[] = "belfry-job-id";
constexpr char kScheduledForHeader[] = "belfry-scheduled-for";

// What a batch and its in-flight messages share. Intrusively refcounted: the batch holds one
// reference and every produced message holds one until its delivery report, so the state
// outlives the batch object when Finish() is never called.
class BatchState final {
 public:
  BatchState() = default;
  BatchState(const BatchState&) = delete;
  BatchState& operator=(const BatchState&) = delete;

  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  // Called before produce(); undone by Abandon() if produce() refuses the message.
  void BeginMessage() {
    Ref();
    std::lock_guard<std::mutex> lock(mu_);
    ++outstanding_;
  }
  void Abandon(const Status& error) { Complete(error); }
  // The delivery report for one message. Drops the message's reference.
  void Complete(const Status& result) {
    bool done = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      --outstanding_;
      if (!result.ok() && first_error_.ok()) first_error_ = result;
      done = outstanding_ == 0;
      if (done && on_done_) RunOnDoneLocked();
    }
    // Only the last report can end a Wait(): waking the waiter for every message costs a
    // futex wake and a context switch per trigger.
    if (done) cv_.notify_all();
    Unref();
  }
  bool Done() {
    std::lock_guard<std::mutex> lock(mu_);
    return outstanding_ == 0;
  }
  // `fn` runs under mu_, so Wait() cannot return while it runs.
  void NotifyWhenDone(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    on_done_ = std::move(fn);
    if (outstanding_ == 0) RunOnDoneLocked();
  }
  void CancelNotify() {
    std::lock_guard<std::mutex> lock(mu_);
    on_done_ = nullptr;
  }
  // An error that never became a message (e.g. an invalid topic caught before produce()).
  void Fail(const Status& error) {
    std::lock_guard<std::mutex> lock(mu_);
    if (first_error_.ok()) first_error_ = error;
  }

  Status Wait(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [this] { return outstanding_ == 0; })) {
      return Status::Retryable("kafka: " + std::to_string(outstanding_) +
                               " triggers not acknowledged within " + std::to_string(timeout.count()) +
                               " ms");
    }
    return first_error_;
  }

 private:
  ~BatchState() = default;

  void RunOnDoneLocked() {
    std::function<void()> fn = std::move(on_done_);
    on_done_ = nullptr;
    fn();
  }

  std::atomic<int64_t> refs_{1};
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t outstanding_ = 0;        // guarded by mu_
  Status first_error_;             // guarded by mu_
  std::function<void()> on_done_;  // guarded by mu_
};

}  // namespace

class KafkaTriggerSink::Impl {
 public:
  Impl(const KafkaConfig& config, KafkaTriggerSinkOptions options)
      : config_(config),
        options_(std::move(options)),
        event_logger_(options_.client_id,
                      [this](RdKafka::Event& e) {
                        if (e.fatal()) fatal_.store(true);
                      }),
        delivery_report_(this) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  ~Impl() {
    stopping_.store(true);
    if (poll_thread_.joinable()) poll_thread_.join();
    std::shared_ptr<RdKafka::Producer> producer = Current();
    if (producer == nullptr) return;
    if (producer->flush(static_cast<int>(options_.close_timeout_ms)) != RdKafka::ERR_NO_ERROR) {
      spdlog::warn("kafka[{}]: {} triggers still queued after {} ms at shutdown; purging", options_.client_id,
                   producer->outq_len(), options_.close_timeout_ms);
    }
    DrainAfterPurge(*producer);
    if (producer.use_count() > 2) {
      spdlog::error("kafka[{}]: sink destroyed while batches are alive", options_.client_id);
    }
  }

  Status Start() {
    StatusOr<std::shared_ptr<RdKafka::Producer>> p = NewProducer();
    if (!p.ok()) return p.status();
    producer_ = std::move(p.value());
    poll_thread_ = std::thread([this] { PollLoop(); });
    return Status::Ok();
  }

  std::shared_ptr<RdKafka::Producer> Current() const {
    std::lock_guard<std::mutex> lock(producer_mu_);
    return producer_;
  }

  void OnDelivered(RdKafka::Message& m) {
    auto* state = static_cast<BatchState*>(m.msg_opaque());
    if (m.err() == RdKafka::ERR_NO_ERROR) {
      sent_.fetch_add(1, std::memory_order_relaxed);
      if (options_.on_delivered) ReportScheduledFor(m);
      if (state != nullptr) state->Complete(Status::Ok());
    } else {
      failed_.fetch_add(1, std::memory_order_relaxed);
      if (state != nullptr) state->Complete(DeliveryStatus(m.err(), m.topic_name()));
    }
  }

  void CountSyncFailure() { failed_.fetch_add(1, std::memory_order_relaxed); }

  const KafkaTriggerSinkOptions& options() const { return options_; }
  uint64_t sent() const { return sent_.load(std::memory_order_relaxed); }
  uint64_t failed() const { return failed_.load(std::memory_order_relaxed); }
  uint64_t restarts() const { return restarts_.load(std::memory_order_relaxed); }

 private:
  class DeliveryReport final : public RdKafka::DeliveryReportCb {
   public:
    explicit DeliveryReport(Impl* impl) : impl_(impl) {}
    void dr_cb(RdKafka::Message& message) override { impl_->OnDelivered(message); }

   private:
    Impl* const impl_;
  };

  StatusOr<std::shared_ptr<RdKafka::Producer>> NewProducer() {
    const KafkaSettings settings = {
        {"enable.idempotence", "true"},
        {"acks", "all"},
        {"linger.ms", std::to_string(options_.linger_ms)},
        {"batch.size", std::to_string(options_.batch_size_bytes)},
        {"compression.type", options_.compression},
        {"queue.buffering.max.messages", std::to_string(options_.queue_max_messages)},
        {"queue.buffering.max.kbytes", std::to_string(options_.queue_max_kbytes)},
        {"message.timeout.ms", std::to_string(options_.message_timeout_ms)},
    };
    StatusOr<std::unique_ptr<RdKafka::Conf>> conf =
        BuildKafkaConf(config_, options_.client_id, settings, &event_logger_);
    if (!conf.ok()) return conf.status();
    std::string errstr;
    if (conf.value()->set("dr_cb", &delivery_report_, errstr) != RdKafka::Conf::CONF_OK) {
      return Status::Invalid("kafka_config", "dr_cb: " + errstr);
    }
    std::shared_ptr<RdKafka::Producer> producer(RdKafka::Producer::create(conf.value().get(), errstr));
    if (producer == nullptr) return Status::Invalid("kafka_config", "creating producer: " + errstr);
    return producer;
  }

  void PollLoop() {
    while (!stopping_.load()) {
      std::shared_ptr<RdKafka::Producer> producer = Current();
      producer->poll(50);
      if (fatal_.exchange(false)) ReplaceProducer(std::move(producer));
    }
  }

  // Swaps in a fresh producer, then fails everything the dead one still holds so that the
  // batches waiting on it finish (with Retryable) instead of timing out.
  void ReplaceProducer(std::shared_ptr<RdKafka::Producer> dead) {
    std::string reason;
    RdKafka::ErrorCode err = dead->fatal_error(reason);
    spdlog::error("kafka[{}]: producer fatal error {} ({}); replacing the producer", options_.client_id,
                  RdKafka::err2str(err), reason);
    StatusOr<std::shared_ptr<RdKafka::Producer>> fresh = NewProducer();
    if (!fresh.ok()) {
      spdlog::error("kafka[{}]: could not create a replacement producer: {}", options_.client_id,
                    fresh.status().ToString());
      fatal_.store(true);  // try again on the next loop
      std::this_thread::sleep_for(std::chrono::seconds(1));
      return;
    }
    {
      std::lock_guard<std::mutex> lock(producer_mu_);
      producer_ = std::move(fresh.value());
    }
    DrainAfterPurge(*dead);
    restarts_.fetch_add(1, std::memory_order_relaxed);
  }

  // Purges the producer's queues and serves the resulting delivery reports, so that every
  // BatchState reference the producer held is released.
  void DrainAfterPurge(RdKafka::Producer& producer) {
    producer.purge(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (producer.outq_len() > 0 && std::chrono::steady_clock::now() < deadline) producer.poll(50);
    producer.poll(0);
  }

  void ReportScheduledFor(RdKafka::Message& m) {
    const RdKafka::Headers* headers = m.headers();
    if (headers == nullptr) return;
    const RdKafka::Headers::Header h = headers->get_last(kScheduledForHeader);
    if (h.err() != RdKafka::ERR_NO_ERROR || h.value() == nullptr) return;
    const char* begin = static_cast<const char*>(h.value());
    EpochMs scheduled_for = 0;
    if (std::from_chars(begin, begin + h.value_size(), scheduled_for).ec == std::errc()) {
      options_.on_delivered(scheduled_for);
    }
  }

  const KafkaConfig config_;
  const KafkaTriggerSinkOptions options_;
  // Both callbacks must outlive every producer (declared before producer_).
  KafkaEventLogger event_logger_;
  DeliveryReport delivery_report_;
  std::atomic<bool> fatal_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> sent_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> restarts_{0};
  mutable std::mutex producer_mu_;
  std::shared_ptr<RdKafka::Producer> producer_;  // guarded by producer_mu_
  std::thread poll_thread_;
};

namespace {

class KafkaTriggerBatch final : public TriggerBatch {
 public:
  KafkaTriggerBatch(KafkaTriggerSink::Impl* sink, std::shared_ptr<RdKafka::Producer> producer)
      : sink_(sink), producer_(std::move(producer)), state_(new BatchState()) {}
  KafkaTriggerBatch(const KafkaTriggerBatch&) = delete;
  KafkaTriggerBatch& operator=(const KafkaTriggerBatch&) = delete;
  ~KafkaTriggerBatch() override {
    state_->CancelNotify();
    state_->Unref();
  }

  void Add(const TriggerView& t) override {
    if (!IsValidKafkaTopicName(t.topic)) {
      sink_->CountSyncFailure();
      state_->Fail(Status::Invalid(
          "invalid_topic",
          "job '" + std::string(t.job_id) + "' names an invalid Kafka topic '" + std::string(t.topic) + "'"));
      return;
    }
    EncodeTriggerValue(t, &value_);
    topic_.assign(t.topic);  // NUL-terminated for librdkafka
    // The same decimal text as ScheduledForHeader(), without a string per trigger.
    char scheduled_for[24];
    const size_t scheduled_for_size = static_cast<size_t>(
        std::to_chars(scheduled_for, scheduled_for + sizeof(scheduled_for), t.scheduled_for_ms).ptr -
        scheduled_for);
    rd_kafka_t* rk = producer_->c_ptr();
    for (;;) {
      state_->BeginMessage();
      // The C call: the headers are built inside librdkafka's message, with no C++ wrapper
      // objects per trigger. RD_KAFKA_MSG_F_COPY copies value and key before it returns.
      const rd_kafka_resp_err_t err = rd_kafka_producev(
          rk, RD_KAFKA_V_TOPIC(topic_.c_str()), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
          RD_KAFKA_V_VALUE(value_.data(), value_.size()), RD_KAFKA_V_KEY(t.key.data(), t.key.size()),
          RD_KAFKA_V_HEADER(kJobIdHeader, t.job_id.data(), static_cast<ssize_t>(t.job_id.size())),
          RD_KAFKA_V_HEADER(kScheduledForHeader, scheduled_for, static_cast<ssize_t>(scheduled_for_size)),
          RD_KAFKA_V_OPAQUE(state_), RD_KAFKA_V_END);
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
      if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        // Back-pressure: wait for deliveries to make room. Never drop a trigger.
        state_->Abandon(Status::Ok());
        producer_->poll(10);
        continue;
      }
      sink_->CountSyncFailure();
      state_->Abandon(DeliveryStatus(static_cast<RdKafka::ErrorCode>(err), topic_));
      return;
    }
  }

  Status Finish() override {
    const auto& o = sink_->options();
    return state_->Wait(std::chrono::milliseconds(o.message_timeout_ms + o.finish_margin_ms));
  }

  bool Done() override { return state_->Done(); }
  void NotifyWhenDone(std::function<void()> fn) override { state_->NotifyWhenDone(std::move(fn)); }

 private:
  KafkaTriggerSink::Impl* const sink_;
  const std::shared_ptr<RdKafka::Producer> producer_;
  BatchState* const state_;
  std::string value_;  // reused across Add calls
  std::string topic_;
};

}  // namespace

StatusOr<std::unique_ptr<KafkaTriggerSink>> KafkaTriggerSink::Create(const KafkaConfig& config,
                                                                     KafkaTriggerSinkOptions options) {
  auto impl = std::make_unique<Impl>(config, std::move(options));
  if (Status s = impl->Start(); !s.ok()) return s;
  return std::unique_ptr<KafkaTriggerSink>(new KafkaTriggerSink(std::move(impl)));
}

KafkaTriggerSink::KafkaTriggerSink(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KafkaTriggerSink::~KafkaTriggerSink() = default;

std::unique_ptr<TriggerBatch> KafkaTriggerSink::NewBatch() {
  return std::make_unique<KafkaTriggerBatch>(impl_.get(), impl_->Current());
}

uint64_t KafkaTriggerSink::triggers_sent_total() const { return impl_->sent(); }
uint64_t KafkaTriggerSink::triggers_failed_total() const { return impl_->failed(); }
int64_t KafkaTriggerSink::queue_length() const { return impl_->Current()->outq_len(); }
uint64_t KafkaTriggerSink::producer_restarts_total() const { return impl_->restarts(); }

void KafkaTriggerSink::InjectFatalErrorForTesting() {
  std::shared_ptr<RdKafka::Producer> p = impl_->Current();
  rd_kafka_test_fatal_error(p->c_ptr(), RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER, "injected by test");
}

}  // namespace belfry
