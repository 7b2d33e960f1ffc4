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
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/topic_policy.h"
#include "core/trigger_encoder.h"
#include "kafka/delivery_error.h"
#include "kafka/kafka_client_config.h"
#include "kafka/trigger_error_class.h"

namespace belfry {
namespace {

constexpr char kJobIdHeader[] = "belfry-job-id";
constexpr char kScheduledForHeader[] = "belfry-scheduled-for";
constexpr char kAttemptHeader[] = "belfry-attempt";  // retries only
constexpr char kManualHeader[] = "belfry-manual";    // triggers and backfills a command asked for

// What a batch and its in-flight messages share. Intrusively refcounted: the batch holds one
// reference and every produced message holds one until its delivery report, so the state
// outlives the batch object when Finish() is never called. The message count is atomic: the
// firing thread adds and the poll thread completes one message per trigger, and only the last
// completion takes the mutex (a lock per trigger on both threads was measurable in bursts).
class BatchState final {
 public:
  explicit BatchState(KafkaTriggerSink::Impl* sink) : sink_(sink) {}
  BatchState(const BatchState&) = delete;
  BatchState& operator=(const BatchState&) = delete;

  KafkaTriggerSink::Impl* sink() const { return sink_; }

  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  // Called before produce(); undone by Abandon() if produce() refuses the message.
  void BeginMessage() {
    Ref();
    outstanding_.fetch_add(1, std::memory_order_relaxed);
  }
  void Abandon(const Status& error) { Complete(error); }
  // The delivery report of one message that failed, with what it was.
  void CompleteFailed(const Status& result, TriggerFailure failure) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      failures_.push_back(std::move(failure));
    }
    Complete(result);
  }
  void AbandonFailed(const Status& error, TriggerFailure failure) { CompleteFailed(error, std::move(failure)); }
  // The delivery report for one message. Drops the message's reference.
  void Complete(const Status& result) {
    if (!result.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      if (first_error_.ok()) first_error_ = result;
    }
    if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      {
        // Taking mu_ orders this after a Wait() that saw the count above zero, so the
        // notification below cannot be lost.
        std::lock_guard<std::mutex> lock(mu_);
        if (on_done_ && outstanding_.load(std::memory_order_acquire) == 0) RunOnDoneLocked();
      }
      cv_.notify_all();
    }
    Unref();
  }
  bool Done() const { return outstanding_.load(std::memory_order_acquire) == 0; }
  // `fn` runs under mu_, so Wait() cannot return while it runs.
  void NotifyWhenDone(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    on_done_ = std::move(fn);
    if (Done()) RunOnDoneLocked();
  }
  void CancelNotify() {
    std::lock_guard<std::mutex> lock(mu_);
    on_done_ = nullptr;
  }
  // An error that never became a message (e.g. an invalid topic caught before produce()).
  void Fail(const Status& error, TriggerFailure failure) {
    std::lock_guard<std::mutex> lock(mu_);
    if (first_error_.ok()) first_error_ = error;
    failures_.push_back(std::move(failure));
  }
  // REQUIRES: Done().
  std::vector<TriggerFailure> TakeFailures() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(failures_);
  }

  Status Wait(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [this] { return Done(); })) {
      return Status::Retryable("kafka: " + std::to_string(outstanding_.load()) +
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

  KafkaTriggerSink::Impl* const sink_;
  std::atomic<int64_t> refs_{1};
  std::atomic<int64_t> outstanding_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  Status first_error_;              // guarded by mu_
  std::function<void()> on_done_;   // guarded by mu_
  std::vector<TriggerFailure> failures_;  // guarded by mu_
};

// The failure of a message that was produced, read back from its delivery report.
TriggerFailure FailureOf(const rd_kafka_message_t& m) {
  const TriggerErrorClass c = ClassifyTriggerError(m.err);
  TriggerFailure f;
  f.kind = c.kind;
  f.reason = c.reason;
  f.error = rd_kafka_err2str(m.err);
  f.topic = rd_kafka_topic_name(m.rkt);
  if (m.key != nullptr) f.key.assign(static_cast<const char*>(m.key), m.key_len);
  if (m.payload != nullptr) f.value.assign(static_cast<const char*>(m.payload), m.len);
  rd_kafka_headers_t* headers = nullptr;
  if (rd_kafka_message_headers(&m, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    const char* name = nullptr;
    const void* value = nullptr;
    size_t size = 0;
    for (size_t i = 0; rd_kafka_header_get_all(headers, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR; ++i) {
      std::string v = value != nullptr ? std::string(static_cast<const char*>(value), size) : std::string();
      if (std::string_view(name) == kJobIdHeader) f.job_id = v;
      if (std::string_view(name) == kScheduledForHeader) {
        std::from_chars(v.data(), v.data() + v.size(), f.scheduled_for_ms);
      }
      f.headers.emplace_back(name, std::move(v));
    }
  }
  return f;
}

}  // namespace

class KafkaTriggerSink::Impl {
 public:
  Impl(const KafkaConfig& config, KafkaTriggerSinkOptions options)
      : config_(config),
        options_(std::move(options)),
        event_logger_(options_.client_id, [this](RdKafka::Event& e) {
          if (e.fatal()) fatal_.store(true);
        }) {}
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

  // The delivery report, through librdkafka's C callback: the C++ one wraps every message in
  // an RdKafka::Message and copies its headers into new objects.
  void OnDelivered(const rd_kafka_message_t& m) {
    auto* state = static_cast<BatchState*>(m._private);
    if (m.err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      sent_.fetch_add(1, std::memory_order_relaxed);
      if (options_.on_delivered) ReportScheduledFor(m);
      if (state != nullptr) state->Complete(Status::Ok());
    } else {
      failed_.fetch_add(1, std::memory_order_relaxed);
      if (state != nullptr) {
        state->CompleteFailed(DeliveryStatus(static_cast<RdKafka::ErrorCode>(m.err), rd_kafka_topic_name(m.rkt)),
                              FailureOf(m));
      }
    }
  }

  void CountSyncFailure() { failed_.fetch_add(1, std::memory_order_relaxed); }

  const KafkaTriggerSinkOptions& options() const { return options_; }
  uint64_t sent() const { return sent_.load(std::memory_order_relaxed); }
  uint64_t failed() const { return failed_.load(std::memory_order_relaxed); }
  uint64_t restarts() const { return restarts_.load(std::memory_order_relaxed); }

 private:
  static void DeliveredTrampoline(rd_kafka_t* /*rk*/, const rd_kafka_message_t* m, void* /*opaque*/) {
    const auto* state = static_cast<const BatchState*>(m->_private);
    if (state != nullptr) state->sink()->OnDelivered(*m);
  }

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
        // The bounded wait before an unknown topic fails its messages (a record error) when
        // auto-creation is off (allow.auto.create.topics=false in kafka.properties).
        {"topic.metadata.propagation.max.ms", std::to_string(options_.unknown_topic_wait_ms)},
    };
    StatusOr<std::unique_ptr<RdKafka::Conf>> conf =
        BuildKafkaConf(config_, options_.client_id, settings, &event_logger_);
    if (!conf.ok()) return conf.status();
    // No C++ dr_cb: the C++ layer would then install its own trampoline over this one.
    rd_kafka_conf_set_dr_msg_cb(conf.value()->c_ptr_global(), &DeliveredTrampoline);
    std::string errstr;
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

  void ReportScheduledFor(const rd_kafka_message_t& m) {
    rd_kafka_headers_t* headers = nullptr;
    if (rd_kafka_message_headers(&m, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
    const void* value = nullptr;
    size_t size = 0;
    if (rd_kafka_header_get_last(headers, kScheduledForHeader, &value, &size) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        value == nullptr) {
      return;
    }
    const char* begin = static_cast<const char*>(value);
    EpochMs scheduled_for = 0;
    if (std::from_chars(begin, begin + size, scheduled_for).ec == std::errc()) {
      options_.on_delivered(scheduled_for);
    }
  }

  const KafkaConfig config_;
  const KafkaTriggerSinkOptions options_;
  // Must outlive every producer (declared before producer_).
  KafkaEventLogger event_logger_;
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
      : sink_(sink), producer_(std::move(producer)), state_(new BatchState(sink)) {}
  KafkaTriggerBatch(const KafkaTriggerBatch&) = delete;
  KafkaTriggerBatch& operator=(const KafkaTriggerBatch&) = delete;
  ~KafkaTriggerBatch() override {
    // Queued messages hold their own references to their topics.
    for (const auto& [name, rkt] : topics_) rd_kafka_topic_destroy(rkt);
    state_->CancelNotify();
    state_->Unref();
  }

  void Add(const TriggerView& t) override {
    if (!IsValidKafkaTopicName(t.topic)) {
      sink_->CountSyncFailure();
      const Status error = Status::Invalid(
          "invalid_topic",
          "job '" + std::string(t.job_id) + "' names an invalid Kafka topic '" + std::string(t.topic) + "'");
      EncodeTriggerValue(t, &value_);
      state_->Fail(error, SyncFailure(t, {TriggerErrorKind::kRecord, "invalid_topic"}, error.message()));
      return;
    }
    rd_kafka_topic_t* rkt = TopicHandle(t.topic);
    if (rkt == nullptr) {
      const rd_kafka_resp_err_t err = rd_kafka_last_error();
      sink_->CountSyncFailure();
      EncodeTriggerValue(t, &value_);
      state_->Fail(DeliveryStatus(static_cast<RdKafka::ErrorCode>(err), std::string(t.topic)),
                   SyncFailure(t, ClassifyTriggerError(err), rd_kafka_err2str(err)));
      return;
    }
    EncodeTriggerValue(t, &value_);
    // The same decimal text as ScheduledForHeader(), without a string per trigger.
    char scheduled_for[24];
    const size_t scheduled_for_size = static_cast<size_t>(
        std::to_chars(scheduled_for, scheduled_for + sizeof(scheduled_for), t.scheduled_for_ms).ptr - scheduled_for);
    // Retries and manual fires only: ordinary triggers carry no belfry-attempt or belfry-manual
    // header, and take the path without a headers object.
    const std::string attempt = t.attempt > 0 ? AttemptHeader(t.attempt) : std::string();
    const bool plain = attempt.empty() && t.manual.empty();
    rd_kafka_t* rk = producer_->c_ptr();
    for (;;) {
      state_->BeginMessage();
      // The C call: the headers are built inside librdkafka's message, with no C++ wrapper
      // objects per trigger. RD_KAFKA_MSG_F_COPY copies value and key before it returns.
      rd_kafka_resp_err_t err;
      if (plain) {
        err = rd_kafka_producev(
            rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_VALUE(value_.data(), value_.size()), RD_KAFKA_V_KEY(t.key.data(), t.key.size()),
            RD_KAFKA_V_HEADER(kJobIdHeader, t.job_id.data(), static_cast<ssize_t>(t.job_id.size())),
            RD_KAFKA_V_HEADER(kScheduledForHeader, scheduled_for, static_cast<ssize_t>(scheduled_for_size)),
            RD_KAFKA_V_OPAQUE(state_), RD_KAFKA_V_END);
      } else {
        // A headers object, which the message owns once producev succeeds.
        rd_kafka_headers_t* headers = rd_kafka_headers_new(4);
        rd_kafka_header_add(headers, kJobIdHeader, -1, t.job_id.data(), static_cast<ssize_t>(t.job_id.size()));
        rd_kafka_header_add(headers, kScheduledForHeader, -1, scheduled_for, static_cast<ssize_t>(scheduled_for_size));
        if (!attempt.empty()) {
          rd_kafka_header_add(headers, kAttemptHeader, -1, attempt.data(), static_cast<ssize_t>(attempt.size()));
        }
        if (!t.manual.empty()) {
          rd_kafka_header_add(headers, kManualHeader, -1, t.manual.data(), static_cast<ssize_t>(t.manual.size()));
        }
        err = rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                RD_KAFKA_V_VALUE(value_.data(), value_.size()),
                                RD_KAFKA_V_KEY(t.key.data(), t.key.size()), RD_KAFKA_V_HEADERS(headers),
                                RD_KAFKA_V_OPAQUE(state_), RD_KAFKA_V_END);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) rd_kafka_headers_destroy(headers);
      }
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
      if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        // Back-pressure: wait for deliveries to make room. Never drop a trigger.
        state_->Abandon(Status::Ok());
        producer_->poll(10);
        continue;
      }
      sink_->CountSyncFailure();
      state_->AbandonFailed(DeliveryStatus(static_cast<RdKafka::ErrorCode>(err), std::string(t.topic)),
                            SyncFailure(t, ClassifyTriggerError(err), rd_kafka_err2str(err)));
      return;
    }
  }

  void Resend(const TriggerFailure& f) override {
    rd_kafka_topic_t* rkt = IsValidKafkaTopicName(f.topic) ? TopicHandle(f.topic) : nullptr;
    if (rkt == nullptr) {
      sink_->CountSyncFailure();
      state_->Fail(Status::Invalid("invalid_topic", "topic '" + f.topic + "' refused again"), f);
      return;
    }
    for (;;) {
      state_->BeginMessage();
      rd_kafka_headers_t* headers = rd_kafka_headers_new(f.headers.size());
      for (const auto& [name, value] : f.headers) {
        rd_kafka_header_add(headers, name.data(), static_cast<ssize_t>(name.size()), value.data(),
                            static_cast<ssize_t>(value.size()));
      }
      const rd_kafka_resp_err_t err = rd_kafka_producev(
          producer_->c_ptr(), RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
          RD_KAFKA_V_VALUE(const_cast<char*>(f.value.data()), f.value.size()),
          RD_KAFKA_V_KEY(f.key.data(), f.key.size()), RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_OPAQUE(state_),
          RD_KAFKA_V_END);
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
      rd_kafka_headers_destroy(headers);
      if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        state_->Abandon(Status::Ok());
        producer_->poll(10);
        continue;
      }
      sink_->CountSyncFailure();
      TriggerFailure again = f;
      const TriggerErrorClass c = ClassifyTriggerError(err);
      again.kind = c.kind;
      again.reason = c.reason;
      again.error = rd_kafka_err2str(err);
      state_->AbandonFailed(DeliveryStatus(static_cast<RdKafka::ErrorCode>(err), f.topic), std::move(again));
      return;
    }
  }

  std::vector<TriggerFailure> Failures() override {
    if (!state_->Done()) return {};
    return state_->TakeFailures();
  }

  Status Finish() override {
    const auto& o = sink_->options();
    return state_->Wait(std::chrono::milliseconds(o.message_timeout_ms + o.finish_margin_ms));
  }

  bool Done() override { return state_->Done(); }
  void NotifyWhenDone(std::function<void()> fn) override { state_->NotifyWhenDone(std::move(fn)); }

 private:
  // A trigger that failed before it became a message; its value is in value_.
  TriggerFailure SyncFailure(const TriggerView& t, TriggerErrorClass c, std::string error) const {
    TriggerFailure f;
    f.kind = c.kind;
    f.reason = c.reason;
    f.error = std::move(error);
    f.job_id = std::string(t.job_id);
    f.topic = std::string(t.topic);
    f.key = std::string(t.key);
    f.value = value_;
    f.scheduled_for_ms = t.scheduled_for_ms;
    f.headers.emplace_back(kJobIdHeader, f.job_id);
    f.headers.emplace_back(kScheduledForHeader, std::to_string(t.scheduled_for_ms));
    if (t.attempt > 0) f.headers.emplace_back(kAttemptHeader, AttemptHeader(t.attempt));
    if (!t.manual.empty()) f.headers.emplace_back(kManualHeader, std::string(t.manual));
    return f;
  }

  // This batch's handle for `name`, created on first use. A handle per message (what
  // RD_KAFKA_V_TOPIC does) takes the client's write lock and searches its topic list for every
  // trigger. nullptr if librdkafka refuses the topic (see rd_kafka_last_error()).
  rd_kafka_topic_t* TopicHandle(std::string_view name) {
    if (const auto it = topics_.find(name); it != topics_.end()) return it->second;
    std::string key(name);  // NUL-terminated for librdkafka
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(producer_->c_ptr(), key.c_str(), nullptr);
    if (rkt != nullptr) topics_.emplace(std::move(key), rkt);
    return rkt;
  }

  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  KafkaTriggerSink::Impl* const sink_;
  const std::shared_ptr<RdKafka::Producer> producer_;
  BatchState* const state_;
  std::string value_;  // reused across Add calls
  std::unordered_map<std::string, rd_kafka_topic_t*, NameHash, std::equal_to<>> topics_;
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
