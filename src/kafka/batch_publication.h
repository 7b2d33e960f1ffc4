// BatchPublication: the records one applied batch publishes (DLQ records, command outcomes) and
// the broker's answer for each, kept until every one is acknowledged. Plain values: BatchConsumer
// produces the records and feeds the delivery reports in. Private to src/kafka.
#pragma once

#include <librdkafka/rdkafkacpp.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "belfry/status.h"
#include "core/backoff.h"

namespace belfry {

struct RecordHeader {
  std::string key;
  std::optional<std::string> value;  // nullopt: a null header value
};

// One record to publish.
struct OutgoingRecord {
  const std::string* topic = nullptr;  // REQUIRES: outlives the record
  std::optional<std::string> key;
  std::optional<std::string> value;  // nullopt: a null value
  std::vector<RecordHeader> headers;
  // A DLQ record carries a value someone else wrote: when that value plus belfry's headers no
  // longer fits, the record is published without its value (kValueDroppedHeader) rather than
  // held back for ever.
  bool is_dlq = false;
};

inline constexpr char kDlqErrorHeader[] = "belfry-error";
inline constexpr char kDlqSourcePartitionHeader[] = "belfry-source-partition";
inline constexpr char kDlqSourceOffsetHeader[] = "belfry-source-offset";
inline constexpr char kDlqValueDroppedHeader[] = "belfry-value-dropped";

// The DLQ record of a consumed message `m` refused with `error`: its key, value and headers,
// plus belfry-error ("<reason>: <message>"), belfry-source-partition and belfry-source-offset.
OutgoingRecord DlqRecord(const RdKafka::Message& m, const std::string* dlq_topic, const Status& error);

class BatchPublication final {
 public:
  // Delivery reports are matched to records by a tag packed into the message opaque: the low 32
  // bits of the batch's ticket, and the record's index.
  struct Tag {
    uint32_t ticket = 0;
    size_t index = 0;
  };
  static Tag ParseTag(void* opaque);

  // Every record starts without an answer. `backoff` paces this batch's retries.
  BatchPublication(uint64_t ticket, std::vector<OutgoingRecord> records, Backoff backoff);

  uint64_t ticket() const { return ticket_; }
  bool Matches(const Tag& tag) const { return tag.ticket == static_cast<uint32_t>(ticket_ & 0xffffffffu); }
  // The opaque to produce record `index` with.
  void* TagOf(size_t index) const;

  size_t size() const { return records_.size(); }
  const OutgoingRecord& record(size_t index) const { return records_[index]; }

  // The broker's (or the producer's) answer for record `index`. Ignored unless the record awaits
  // one (an unknown index, a report for a record already answered).
  void OnReport(size_t index, RdKafka::ErrorCode err);

  // Every record has an answer.
  bool AllReported() const { return outstanding_ == 0; }
  // Every record is acknowledged.
  bool Delivered() const;
  // Every record has an answer and some are failures.
  bool Failed() const { return AllReported() && !Delivered(); }

  struct Retry {
    std::vector<size_t> indices;                          // the failed records
    RdKafka::ErrorCode first_error = RdKafka::ERR_NO_ERROR;  // of the first of them
  };
  // REQUIRES: Failed(). The records to produce again. A DLQ record refused as too large loses
  // its value here (kDlqValueDroppedHeader says how many bytes).
  Retry PrepareRetry();
  // The records of `retry` await an answer again, as attempt() + 1.
  void StartRetry(const Retry& retry);

  int attempt() const { return attempt_; }
  Backoff& backoff() { return backoff_; }

 private:
  uint64_t ticket_ = 0;  // the batch's CommitQueue ticket
  std::vector<OutgoingRecord> records_;
  std::vector<RdKafka::ErrorCode> results_;  // per record; ERR__IN_PROGRESS until answered
  size_t outstanding_ = 0;                   // records without an answer
  int attempt_ = 1;
  Backoff backoff_;
};

}  // namespace belfry
