// GroupMembership: a KafkaConsumer's place in its consumer group, shared by the command and the
// execution consumer (BatchConsumer). It is the consumer's rebalance callback (assign and unassign, eager or
// cooperative) and knows the assigned partitions; and it waits while keeping the membership: when
// the consumer cannot take new messages (its store or DLQ is failing and it backs off), the
// assigned partitions are paused and consume() is still called every 100 ms, so that
// max.poll.interval.ms never passes and the group does not evict the member. Private to src/kafka.
#pragma once

#include <librdkafka/rdkafkacpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "belfry/stop_signal.h"
#include "kafka/ordered_messages.h"

namespace belfry {

// Thread-safety: everything but the *_total() counters is for the consuming thread only (librdkafka
// calls rebalance_cb inside consume() and close(), on that thread).
class GroupMembership final : public RdKafka::RebalanceCb {
 public:
  using MessagePtr = std::unique_ptr<RdKafka::Message>;
  using Partition = std::pair<std::string, int32_t>;  // (topic, partition)
  using Carryover = OrderedMessages<MessagePtr>;
  enum class WaitResult { kElapsed, kStopped };

  explicit GroupMembership(std::string client_id) : client_id_(std::move(client_id)) {}
  GroupMembership(const GroupMembership&) = delete;
  GroupMembership& operator=(const GroupMembership&) = delete;

  // REQUIRES: called once, before the first consume(), with the consumer whose "rebalance_cb"
  // this is. This object must outlive the consumer's close().
  void Attach(RdKafka::KafkaConsumer* consumer) { consumer_ = consumer; }

  void rebalance_cb(RdKafka::KafkaConsumer* consumer, RdKafka::ErrorCode err,
                    std::vector<RdKafka::TopicPartition*>& partitions) override;

  // Waits `ms` with the assigned partitions paused (they stay paused until Resume(), and so are
  // partitions assigned meanwhile), calling consume() at least every 100 ms so that the group
  // keeps this member. Messages consume() still hands out (fetched before the pause) go to
  // carryover(). Returns kStopped as soon as `stop` is requested.
  WaitResult WaitPaused(StopSignal& stop, int64_t ms);
  // Resumes the partitions after WaitPaused; a no-op when nothing is paused.
  void Resume();

  bool IsAssigned(const Partition& tp) const { return assigned_.contains(tp); }
  // Messages consumed during waits, to start the next batch. Those of partitions revoked since
  // are dropped: their next owner reads them from the committed offset.
  Carryover& carryover() { return carryover_; }

  // Closes the attached consumer once, leaving the group; later calls (and calls before Attach)
  // do nothing. It first unsubscribes and serves the consumer's queue until the member has left
  // (no partition assigned, no member id), for up to `timeout_ms`, and only then calls close():
  // - a static member (group.instance.id, see GroupInstanceId) does not leave on close(): its
  //   partitions would wait for the session timeout, which is the point when it is killed (its
  //   restart takes them straight back). On a clean shutdown it must leave, so that they move at
  //   once: unsubscribe() sends LeaveGroup (librdkafka skips it only on termination);
  // - any member whose assignment is still waiting in its queue (start-up failed right after it
  //   joined) would have close() serve it, and rd_kafka_assign() inside the rebalance callback
  //   never returns while the group is terminating (librdkafka 2.0.2, eager protocol:
  //   confluentinc/librdkafka#4884; GroupMembershipTest). Served before close(), it is harmless.
  // Messages consumed meanwhile are dropped uncommitted; their next owner reads them from the
  // committed offset. Errors are logged.
  void Close(int64_t timeout_ms = 5000);

  // Logs a consume() error at WARN, each error code at most once per 30 s.
  void LogConsumeError(const RdKafka::Message& m);

  // Since construction: assignments received, and revocations (a lost assignment, an eviction
  // and close() included). Thread-safe.
  uint64_t assignments_total() const { return assignments_total_.load(); }
  uint64_t revocations_total() const { return revocations_total_.load(); }

 private:
  void PauseAssigned();

  const std::string client_id_;
  RdKafka::KafkaConsumer* consumer_ = nullptr;  // not owned
  bool closed_ = false;
  std::set<Partition> assigned_;
  Carryover carryover_;
  bool paused_ = false;
  RdKafka::ErrorCode last_consume_error_ = RdKafka::ERR_NO_ERROR;
  std::chrono::steady_clock::time_point last_consume_error_log_{};
  std::atomic<uint64_t> assignments_total_{0};
  std::atomic<uint64_t> revocations_total_{0};
};

}  // namespace belfry
