#include "kafka/batch_consumer.h"

#include <librdkafka/rdkafka.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "kafka/delivery_error.h"
#include "kafka/ordered_messages.h"
#include "kafka/topic_partition_list.h"

namespace belfry {
namespace {

using MessagePtr = BatchConsumer::MessagePtr;
using OrderedBatch = OrderedMessages<MessagePtr>;

int64_t MicrosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
}

// The next offset to consume, per partition, once `batch` is done.
CommitQueue::Offsets NextOffsets(const std::vector<MessagePtr>& batch) {
  CommitQueue::Offsets next;
  for (const MessagePtr& m : batch) {
    int64_t& n = next[{m->topic_name(), m->partition()}];
    n = std::max(n, m->offset() + 1);
  }
  return next;
}

}  // namespace

StatusOr<std::unique_ptr<BatchConsumer>> BatchConsumer::Create(const KafkaConfig& config,
                                                               BatchConsumerOptions options) {
  std::unique_ptr<BatchConsumer> consumer(new BatchConsumer(config, std::move(options)));
  if (Status s = consumer->Init(); !s.ok()) return s;
  return consumer;
}

BatchConsumer::BatchConsumer(const KafkaConfig& config, BatchConsumerOptions options)
    : config_(config),
      options_(std::move(options)),
      event_logger_(options_.client_id),
      producer_logger_(options_.client_id + options_.producer_suffix),
      membership_(options_.client_id),
      delivery_report_(this),
      apply_backoff_(options_.retry, options_.backoff_seed) {}

BatchConsumer::~BatchConsumer() {
  membership_.Close();
  if (producer_ != nullptr) {
    producer_->flush(5000);
    producer_->purge(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    producer_->poll(0);
  }
}

Status BatchConsumer::Init() {
  KafkaSettings consumer_settings = options_.consumer_settings;
  if (!options_.group_instance_id.empty()) {
    consumer_settings.emplace_back("group.instance.id", options_.group_instance_id);
  }
  consumer_settings.insert(consumer_settings.end(), ConsumerFetchSettings().begin(), ConsumerFetchSettings().end());
  StatusOr<std::unique_ptr<RdKafka::Conf>> cconf =
      BuildKafkaConf(config_, options_.client_id, consumer_settings, &event_logger_);
  if (!cconf.ok()) return cconf.status();
  std::string errstr;
  if (cconf.value()->set("rebalance_cb", &membership_, errstr) != RdKafka::Conf::CONF_OK) {
    return Status::Invalid("kafka_config", "rebalance_cb: " + errstr);
  }
  consumer_.reset(RdKafka::KafkaConsumer::create(cconf.value().get(), errstr));
  if (consumer_ == nullptr) return Status::Invalid("kafka_config", "creating consumer: " + errstr);
  membership_.Attach(consumer_.get());

  StatusOr<std::unique_ptr<RdKafka::Producer>> producer = NewProducer();
  if (!producer.ok()) return producer.status();
  producer_ = std::move(producer.value());

  const RdKafka::ErrorCode err = consumer_->subscribe({options_.topic});
  if (err != RdKafka::ERR_NO_ERROR) {
    return Status::Retryable("subscribing to '" + options_.topic + "': " + RdKafka::err2str(err));
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<RdKafka::Producer>> BatchConsumer::NewProducer() {
  const KafkaSettings settings = {
      {"enable.idempotence", "true"},
      {"acks", "all"},
      {"linger.ms", "5"},
      {"message.timeout.ms", std::to_string(options_.publish_timeout_ms)},
  };
  StatusOr<std::unique_ptr<RdKafka::Conf>> conf =
      BuildKafkaConf(config_, options_.client_id + options_.producer_suffix, settings, &producer_logger_);
  if (!conf.ok()) return conf.status();
  std::string errstr;
  if (conf.value()->set("dr_cb", &delivery_report_, errstr) != RdKafka::Conf::CONF_OK) {
    return Status::Invalid("kafka_config", "dr_cb: " + errstr);
  }
  std::unique_ptr<RdKafka::Producer> producer(RdKafka::Producer::create(conf.value().get(), errstr));
  if (producer == nullptr) return Status::Invalid("kafka_config", "creating producer: " + errstr);
  return producer;
}

// An idempotent producer that hit a fatal error refuses everything; replace it.
void BatchConsumer::ReplaceProducerIfFatal() {
  std::string reason;
  const RdKafka::ErrorCode err = producer_->fatal_error(reason);
  if (err == RdKafka::ERR_NO_ERROR) return;
  spdlog::error("kafka[{}]: {} producer fatal error {} ({}); replacing it", options_.client_id,
                options_.records_name, RdKafka::err2str(err), reason);
  StatusOr<std::unique_ptr<RdKafka::Producer>> fresh = NewProducer();
  if (!fresh.ok()) {
    spdlog::error("kafka[{}]: could not create a replacement producer: {}", options_.client_id,
                  fresh.status().ToString());
    return;
  }
  producer_->purge(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  producer_->flush(1000);  // reports of purged records mark them failed; Republish retries them
  producer_ = std::move(fresh.value());
}

void BatchConsumer::Run(StopSignal& stop, const ApplyBatch& apply) {
  std::string group_id;
  for (const auto& [key, value] : options_.consumer_settings) {
    if (key == "group.id") group_id = value;
  }
  spdlog::info("kafka[{}]: consuming '{}' as group '{}'", options_.client_id, options_.topic, group_id);
  const size_t max_unsettled = std::max<size_t>(1, options_.max_unsettled_batches);
  // Pipelined: batch N+1 is gathered and applied while batch N's records are still being
  // acknowledged. Offsets are committed in apply order, each batch's only after it was applied
  // and all of its records were acknowledged (CommitQueue).
  while (!stop.requested()) {
    const auto gather_start = SteadyClock::now();
    std::vector<MessagePtr> batch = Gather(stop);
    AddStageTime(&BatchStageTimes::gather_us, MicrosSince(gather_start));
    MaybeRefreshLag();
    if (stop.requested()) break;
    if (!batch.empty() && !ProcessBatch(batch, apply, stop)) break;
    if (!SettleAndCommit(stop, max_unsettled)) break;
  }
  AbandonUnsettled();
  membership_.Resume();
  // Leaves the group, so that the partitions move to another member now rather than after the
  // session timeout (a static member too: GroupMembership::Close). Uncommitted work is
  // re-delivered to the next owner.
  membership_.Close();
}

BatchConsumerStats BatchConsumer::Stats() const {
  BatchConsumerStats stats;
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats = stats_;
  }
  stats.assignments_total = membership_.assignments_total();
  stats.revocations_total = membership_.revocations_total();
  return stats;
}

void BatchConsumer::OnDelivered(RdKafka::Message& m) {
  const BatchPublication::Tag tag = BatchPublication::ParseTag(m.msg_opaque());
  for (BatchPublication& p : publications_) {
    if (!p.Matches(tag)) continue;
    p.OnReport(tag.index, m.err());
    return;
  }
}

// Consumes up to batch_max messages: waits (in 100 ms slices, for stop) for the first, then
// takes what is already buffered, for at most batch_wait_ms (BatchIsReady). While earlier
// batches await acknowledgements it waits in short slices and settles them.
std::vector<MessagePtr> BatchConsumer::Gather(StopSignal& stop) {
  OrderedBatch batch = std::exchange(membership_.carryover(), OrderedBatch());
  const size_t max = std::max<size_t>(1, options_.batch_max);
  const int64_t wait_ms = std::max<int64_t>(0, options_.batch_wait_ms);
  SteadyClock::time_point first_at = SteadyClock::now();
  bool drained = false;
  while (!stop.requested()) {
    const int64_t waited_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - first_at).count();
    if (BatchIsReady(batch.size(), max, waited_ms, wait_ms, drained)) break;
    int timeout_ms = 0;
    if (batch.empty()) {
      if (!commit_queue_.empty()) {
        if (!SettleAndCommit(stop, SIZE_MAX)) break;
      }
      timeout_ms = commit_queue_.empty() ? 100 : 2;
    }
    MessagePtr m(consumer_->consume(timeout_ms));
    if (m->err() == RdKafka::ERR__TIMED_OUT) {
      drained = true;
      continue;
    }
    if (m->err() != RdKafka::ERR_NO_ERROR) {
      membership_.LogConsumeError(*m);
      continue;
    }
    drained = false;
    if (batch.empty()) first_at = SteadyClock::now();
    batch.Append(std::move(m));
  }
  return batch.Take();
}

// Applies the batch and starts publishing its records. Returns false iff stop was requested
// before the store accepted it (then nothing of it is published or committed).
bool BatchConsumer::ProcessBatch(const std::vector<MessagePtr>& batch, const ApplyBatch& apply, StopSignal& stop) {
  std::optional<Applied> applied = apply(batch, stop);
  if (!applied) {
    spdlog::info("kafka[{}]: stopping with an unapplied batch of {}; it stays uncommitted", options_.client_id,
                 batch.size());
    return false;
  }
  membership_.Resume();
  const uint64_t ticket = commit_queue_.Push(NextOffsets(batch));
  pending_.emplace(ticket, Pending{batch.size(), std::move(applied->on_committed)});
  // Each batch's publication backs off on its own, with its own jitter.
  Backoff backoff(options_.retry, options_.backoff_seed ^ (ticket * 0xd1342543de82ef95ULL));
  BatchPublication& p = publications_.emplace_back(ticket, std::move(applied->records), backoff);
  for (size_t i = 0; i < p.size(); ++i) Produce(p, i);
  producer_->poll(0);
  return true;
}

// Serves delivery reports, retries failed records, and commits the offsets of the settled
// prefix of batches. Waits until at most `max_unsettled` batches are unsettled. Returns false
// iff stop was requested first.
bool BatchConsumer::SettleAndCommit(StopSignal& stop, size_t max_unsettled) {
  const auto start = SteadyClock::now();
  producer_->poll(0);
  bool ok = true;
  for (;;) {
    for (auto it = publications_.begin(); it != publications_.end();) {
      if (!it->AllReported()) {
        ++it;
        continue;
      }
      if (it->Failed()) {
        if (!Republish(*it, stop)) {
          ok = false;
          break;
        }
        ++it;
        continue;
      }
      commit_queue_.MarkSettled(it->ticket());
      it = publications_.erase(it);
    }
    if (!ok) break;
    CommitSettled();
    if (commit_queue_.size() <= max_unsettled) break;
    if (stop.requested()) {
      ok = false;
      break;
    }
    producer_->poll(100);
  }
  AddStageTime(&BatchStageTimes::publish_us, MicrosSince(start));
  return ok;
}

void BatchConsumer::CommitSettled() {
  CommitQueue::Committable c = commit_queue_.PopCommittable();
  if (c.tickets.empty()) {
    RecordWaitingToCommit();
    return;
  }
  const auto commit_start = SteadyClock::now();
  Commit(c.offsets);
  AddStageTime(&BatchStageTimes::commit_us, MicrosSince(commit_start));
  for (uint64_t ticket : c.tickets) {
    auto node = pending_.extract(ticket);
    if (node.empty()) continue;
    ++batches_committed_;
    messages_committed_ += node.mapped().size;
    if (node.mapped().on_committed) node.mapped().on_committed();
  }
  RecordWaitingToCommit();
}

// After a commit round, so that a reader who sees the count knows the round is over.
void BatchConsumer::RecordWaitingToCommit() {
  std::lock_guard<std::mutex> lock(stats_mu_);
  stats_.batches_waiting_to_commit = commit_queue_.settled_waiting();
}

// Stop: batches not yet settled stay uncommitted; whoever owns their partitions next
// re-applies them (idempotently) and republishes their records.
void BatchConsumer::AbandonUnsettled() {
  if (commit_queue_.empty() && publications_.empty()) return;
  if (!publications_.empty()) {
    spdlog::info("kafka[{}]: stopping with {} batch(es) whose {} records are not all acknowledged; "
                 "they stay uncommitted",
                 options_.client_id, commit_queue_.size(), options_.records_name);
  }
  // Whatever is already settled can still be committed.
  producer_->poll(0);
  for (auto it = publications_.begin(); it != publications_.end();) {
    if (!it->Delivered()) {
      ++it;
      continue;
    }
    commit_queue_.MarkSettled(it->ticket());
    it = publications_.erase(it);
  }
  CommitSettled();
  producer_->purge(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  producer_->flush(1000);
  publications_.clear();
  commit_queue_.Clear();
  pending_.clear();
  RecordWaitingToCommit();
}

void BatchConsumer::AddStageTime(int64_t BatchStageTimes::*field, int64_t us) {
  std::lock_guard<std::mutex> lock(stats_mu_);
  stats_.stage_times.*field += us;
}

// Logs where the Run thread's time went since the previous call (debug level).
void BatchConsumer::LogStageTimes() {
  if (!spdlog::should_log(spdlog::level::debug)) return;
  BatchStageTimes a;
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    a = stats_.stage_times;
  }
  const BatchStageTimes& b = logged_stage_times_;
  const uint64_t batches = batches_committed_ - logged_batches_;
  const uint64_t messages = messages_committed_ - logged_messages_;
  spdlog::debug(
      "kafka[{}]: {} batches, {} messages (mean {:.0f}); ms in gather {} prepare {} apply {} publish {} "
      "commit {}",
      options_.client_id, batches, messages, batches == 0 ? 0.0 : double(messages) / double(batches),
      (a.gather_us - b.gather_us) / 1000, (a.prepare_us - b.prepare_us) / 1000, (a.apply_us - b.apply_us) / 1000,
      (a.publish_us - b.publish_us) / 1000, (a.commit_us - b.commit_us) / 1000);
  logged_stage_times_ = a;
  logged_batches_ = batches_committed_;
  logged_messages_ = messages_committed_;
}

std::optional<std::vector<RefusedItem>> BatchConsumer::ApplyIsolating(
    std::string_view what, size_t count, const std::function<Status(size_t, size_t)>& apply_range, StopSignal& stop,
    int32_t* attempts) {
  if (count == 0) return std::vector<RefusedItem>();
  BisectionResult r = ApplyIsolatingRefusals(count, [&](size_t first, size_t last) {
    return ApplyUntilAnswered(what, last - first, [&] { return apply_range(first, last); }, stop, attempts);
  });
  if (r.stopped) return std::nullopt;
  for (const RefusedItem& item : r.refused) {
    spdlog::error("kafka[{}]: the store refused one of {} {} for good ({} applies to isolate it): {}; "
                  "rejecting it (store_error) and moving on",
                  options_.client_id, count, what, r.applies, item.status.ToString());
  }
  return std::move(r.refused);
}

// Runs `apply` (one store transaction over `count` items) until the store answers for good: Ok,
// or a permanent error (IsPermanentStoreError: the data is refused). Every other error is
// retried with a backoff, the group membership kept. nullopt iff stop was requested first.
std::optional<Status> BatchConsumer::ApplyUntilAnswered(std::string_view what, size_t count,
                                                        const std::function<Status()>& apply, StopSignal& stop,
                                                        int32_t* attempts) {
  apply_backoff_.Reset();
  for (;;) {
    ++*attempts;
    const Status s = ApplyOnce(apply);
    if (s.ok() || IsPermanentStoreError(s)) return s;
    const int64_t backoff_ms = apply_backoff_.NextDelayMs();
    if (s.retryable()) {
      spdlog::warn("kafka[{}]: applying {} {} failed (attempt {}): {}; retrying in {} ms", options_.client_id, count,
                   what, *attempts, s.ToString(), backoff_ms);
    } else {
      // The database is in the wrong state (not migrated, read-only, ...): not the data's fault,
      // so nothing is refused; retry until an operator fixes it.
      spdlog::error("kafka[{}]: applying {} {} failed (attempt {}): {}; retrying in {} ms", options_.client_id, count,
                    what, *attempts, s.ToString(), backoff_ms);
    }
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      ++stats_.apply_retries_total;
    }
    if (membership_.WaitPaused(stop, backoff_ms) == GroupMembership::WaitResult::kStopped) return std::nullopt;
  }
}

// The store reports errors as Status; an exception escaping it is treated the same way.
Status BatchConsumer::ApplyOnce(const std::function<Status()>& apply) const {
  try {
    return apply();
  } catch (const std::exception& e) {
    return Status::Retryable("exception from the " + options_.store_name + ": " + e.what());
  } catch (...) {
    return Status::Retryable("unknown exception from the " + options_.store_name);
  }
}

// Called once every record of `p` has a report and some failed: waits a backoff (keeping the
// group membership), then produces the failed records again. Returns false iff stop was
// requested first.
bool BatchConsumer::Republish(BatchPublication& p, StopSignal& stop) {
  const BatchPublication::Retry retry = p.PrepareRetry();
  ReplaceProducerIfFatal();
  const int64_t backoff_ms = p.backoff().NextDelayMs();
  const auto level = ClassifyDeliveryError(retry.first_error) == SendStatus::kErrorNonRetryable ? spdlog::level::err
                                                                                                : spdlog::level::warn;
  spdlog::log(level, "kafka[{}]: {} of {} {} records not delivered (attempt {}, first error: {}); retrying in {} ms",
              options_.client_id, retry.indices.size(), p.size(), options_.records_name, p.attempt(),
              RdKafka::err2str(retry.first_error), backoff_ms);
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++stats_.publish_retries_total;
  }
  if (membership_.WaitPaused(stop, backoff_ms) == GroupMembership::WaitResult::kStopped) return false;
  membership_.Resume();
  p.StartRetry(retry);
  for (size_t i : retry.indices) Produce(p, i);
  producer_->poll(0);
  return true;
}

// Produces record `index` of `p`. A record the producer refuses outright counts as reported.
void BatchConsumer::Produce(BatchPublication& p, size_t index) {
  const OutgoingRecord& rec = p.record(index);
  void* const tag = p.TagOf(index);
  for (;;) {
    std::unique_ptr<RdKafka::Headers> headers;
    if (!rec.headers.empty()) {
      headers.reset(RdKafka::Headers::create());
      for (const RecordHeader& h : rec.headers) {
        headers->add(h.key, h.value ? h.value->data() : nullptr, h.value ? h.value->size() : 0);
      }
    }
    const RdKafka::ErrorCode err =
        producer_->produce(*rec.topic, RdKafka::Topic::PARTITION_UA, RdKafka::Producer::RK_MSG_COPY,
                           rec.value ? const_cast<char*>(rec.value->data()) : nullptr,
                           rec.value ? rec.value->size() : 0,
                           rec.key ? rec.key->data() : nullptr, rec.key ? rec.key->size() : 0, /*timestamp=*/0,
                           headers.get(), tag);
    if (err == RdKafka::ERR_NO_ERROR) {
      headers.release();  // owned by librdkafka now
      return;
    }
    if (err == RdKafka::ERR__QUEUE_FULL) {
      producer_->poll(50);
      continue;
    }
    p.OnReport(index, err);
    return;
  }
}

void BatchConsumer::Commit(const CommitQueue::Offsets& next) {
  TopicPartitionList offsets;
  for (const auto& [tp, offset] : next) {
    // A revoked partition's position is its new owner's business; the batch was applied, so
    // skipping its commit only costs an idempotent replay.
    if (membership_.IsAssigned(tp)) offsets.Add(tp.first, tp.second, offset);
  }
  if (offsets.empty()) return;
  const RdKafka::ErrorCode err = consumer_->commitSync(offsets.get());
  if (err != RdKafka::ERR_NO_ERROR) {
    spdlog::warn("kafka[{}]: committing offsets failed: {} (the batch will be re-applied idempotently)",
                 options_.client_id, RdKafka::err2str(err));
    return;
  }
  for (const RdKafka::TopicPartition* tp : offsets.get()) {
    if (tp->err() != RdKafka::ERR_NO_ERROR) {
      spdlog::warn("kafka[{}]: committing {}[{}]@{} failed: {}", options_.client_id, tp->topic(), tp->partition(),
                   tp->offset(), RdKafka::err2str(tp->err()));
    }
  }
}

void BatchConsumer::MaybeRefreshLag() {
  const auto now = SteadyClock::now();
  if (now - last_lag_refresh_ < std::chrono::milliseconds(options_.lag_refresh_ms)) return;
  last_lag_refresh_ = now;
  LogStageTimes();
  TopicPartitionList parts;
  if (consumer_->assignment(parts.get()) != RdKafka::ERR_NO_ERROR) return;
  int64_t lag = 0;
  bool known = parts.empty();
  if (!parts.empty() && consumer_->position(parts.get()) == RdKafka::ERR_NO_ERROR) {
    for (const RdKafka::TopicPartition* tp : parts.get()) {
      int64_t low = 0;
      int64_t high = 0;
      if (tp->offset() < 0 ||
          consumer_->get_watermark_offsets(tp->topic(), tp->partition(), &low, &high) != RdKafka::ERR_NO_ERROR ||
          high < 0) {
        continue;
      }
      lag += std::max<int64_t>(0, high - tp->offset());
      known = true;
    }
  }
  std::lock_guard<std::mutex> lock(stats_mu_);
  stats_.consumer_lag = known ? lag : -1;
}

}  // namespace belfry
