#include "kafka/group_membership.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "kafka/topic_partition_list.h"

namespace belfry {
namespace {

using SteadyClock = std::chrono::steady_clock;

std::string PartitionsToString(const std::vector<RdKafka::TopicPartition*>& parts) {
  std::string out;
  for (const RdKafka::TopicPartition* tp : parts) {
    if (!out.empty()) out += ",";
    out += tp->topic() + "[" + std::to_string(tp->partition()) + "]";
  }
  return out.empty() ? "(none)" : out;
}

}  // namespace

void GroupMembership::rebalance_cb(RdKafka::KafkaConsumer* consumer, RdKafka::ErrorCode err,
                                   std::vector<RdKafka::TopicPartition*>& partitions) {
  const bool cooperative = consumer->rebalance_protocol() == "COOPERATIVE";
  if (err == RdKafka::ERR__ASSIGN_PARTITIONS) {
    ++assignments_total_;
    spdlog::info("kafka[{}]: assigned {}", client_id_, PartitionsToString(partitions));
    if (cooperative) {
      std::unique_ptr<RdKafka::Error> e(consumer->incremental_assign(partitions));
      if (e != nullptr) spdlog::error("kafka[{}]: incremental_assign: {}", client_id_, e->str());
    } else {
      assigned_.clear();
      const RdKafka::ErrorCode e = consumer->assign(partitions);
      if (e != RdKafka::ERR_NO_ERROR) spdlog::error("kafka[{}]: assign: {}", client_id_, RdKafka::err2str(e));
    }
    for (const RdKafka::TopicPartition* tp : partitions) assigned_.emplace(tp->topic(), tp->partition());
    // While the owner backs off nothing new may be fetched, from new partitions too.
    if (paused_) consumer->pause(partitions);
    return;
  }
  ++revocations_total_;
  if (err == RdKafka::ERR__REVOKE_PARTITIONS) {
    spdlog::info("kafka[{}]: revoked {}", client_id_, PartitionsToString(partitions));
  } else {
    spdlog::error("kafka[{}]: rebalance error {}; dropping the assignment", client_id_,
                  RdKafka::err2str(err));
  }
  std::set<Partition> revoked;
  for (const RdKafka::TopicPartition* tp : partitions) revoked.emplace(tp->topic(), tp->partition());
  if (cooperative && err == RdKafka::ERR__REVOKE_PARTITIONS) {
    std::unique_ptr<RdKafka::Error> e(consumer->incremental_unassign(partitions));
    if (e != nullptr) spdlog::error("kafka[{}]: incremental_unassign: {}", client_id_, e->str());
    for (const Partition& tp : revoked) assigned_.erase(tp);
  } else {
    consumer->unassign();
    assigned_.clear();
  }
  // Messages held back for the next batch now belong to whoever gets their partitions.
  carryover_.Retain([&](const Partition& tp) { return assigned_.contains(tp); });
}

GroupMembership::WaitResult GroupMembership::WaitPaused(StopSignal& stop, int64_t ms) {
  PauseAssigned();
  const auto deadline = SteadyClock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    MessagePtr m(consumer_->consume(0));
    if (m->err() == RdKafka::ERR_NO_ERROR) {
      carryover_.Append(std::move(m));
    } else if (m->err() != RdKafka::ERR__TIMED_OUT) {
      LogConsumeError(*m);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0) return WaitResult::kElapsed;
    if (!stop.WaitFor(std::min(left, std::chrono::milliseconds(100)))) return WaitResult::kStopped;
  }
}

void GroupMembership::PauseAssigned() {
  if (paused_) return;
  paused_ = true;
  TopicPartitionList parts;
  consumer_->assignment(parts.get());
  if (!parts.empty()) consumer_->pause(parts.get());
}

void GroupMembership::Resume() {
  if (!paused_) return;
  paused_ = false;
  TopicPartitionList parts;
  consumer_->assignment(parts.get());
  if (!parts.empty()) consumer_->resume(parts.get());
}

void GroupMembership::LogConsumeError(const RdKafka::Message& m) {
  const auto now = SteadyClock::now();
  if (m.err() == last_consume_error_ && now - last_consume_error_log_ < std::chrono::seconds(30)) return;
  last_consume_error_ = m.err();
  last_consume_error_log_ = now;
  spdlog::warn("kafka[{}]: consume: {} ({})", client_id_, RdKafka::err2str(m.err()), m.errstr());
}

void GroupMembership::Close(int64_t timeout_ms) {
  if (consumer_ == nullptr || closed_) return;
  closed_ = true;
  const RdKafka::ErrorCode err = consumer_->unsubscribe();
  if (err != RdKafka::ERR_NO_ERROR) {
    spdlog::warn("kafka[{}]: unsubscribe: {}", client_id_, RdKafka::err2str(err));
  } else {
    const auto deadline = SteadyClock::now() + std::chrono::milliseconds(timeout_ms);
    // Serves what the queue holds (an assignment not yet served included), then the revocation.
    while (SteadyClock::now() < deadline && (!assigned_.empty() || !consumer_->memberid().empty())) {
      std::unique_ptr<RdKafka::Message> m(consumer_->consume(20));
    }
    if (!assigned_.empty() || !consumer_->memberid().empty()) {
      spdlog::warn("kafka[{}]: did not leave the group within {} ms; its partitions wait for the session "
                   "timeout",
                   client_id_, timeout_ms);
    }
  }
  if (const RdKafka::ErrorCode e = consumer_->close(); e != RdKafka::ERR_NO_ERROR) {
    spdlog::warn("kafka[{}]: close: {}", client_id_, RdKafka::err2str(e));
  }
}

}  // namespace belfry
