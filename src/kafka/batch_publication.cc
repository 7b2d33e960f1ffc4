#include "kafka/batch_publication.h"

#include <algorithm>
#include <utility>

namespace belfry {

// The tag is packed into a pointer.
static_assert(sizeof(void*) >= sizeof(uint64_t), "requires 64-bit pointers");

OutgoingRecord DlqRecord(const RdKafka::Message& m, const std::string* dlq_topic, const Status& error) {
  OutgoingRecord rec;
  rec.topic = dlq_topic;
  rec.is_dlq = true;
  if (m.key_pointer() != nullptr) rec.key.emplace(static_cast<const char*>(m.key_pointer()), m.key_len());
  if (m.payload() != nullptr) rec.value.emplace(static_cast<const char*>(m.payload()), m.len());
  if (const RdKafka::Headers* headers = const_cast<RdKafka::Message&>(m).headers(); headers != nullptr) {
    for (const RdKafka::Headers::Header& h : headers->get_all()) {
      RecordHeader copy{h.key(), std::nullopt};
      if (h.value() != nullptr) copy.value.emplace(static_cast<const char*>(h.value()), h.value_size());
      rec.headers.push_back(std::move(copy));
    }
  }
  rec.headers.push_back({kDlqErrorHeader, error.ToString()});
  rec.headers.push_back({kDlqSourcePartitionHeader, std::to_string(m.partition())});
  rec.headers.push_back({kDlqSourceOffsetHeader, std::to_string(m.offset())});
  return rec;
}

BatchPublication::Tag BatchPublication::ParseTag(void* opaque) {
  const auto tag = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(opaque));
  return Tag{static_cast<uint32_t>(tag >> 32), static_cast<size_t>(tag & 0xffffffffu)};
}

BatchPublication::BatchPublication(uint64_t ticket, std::vector<OutgoingRecord> records, Backoff backoff)
    : ticket_(ticket),
      records_(std::move(records)),
      results_(records_.size(), RdKafka::ERR__IN_PROGRESS),
      outstanding_(records_.size()),
      backoff_(backoff) {}

void* BatchPublication::TagOf(size_t index) const {
  const uint64_t tag = (uint64_t{static_cast<uint32_t>(ticket_ & 0xffffffffu)} << 32) | index;
  return reinterpret_cast<void*>(static_cast<uintptr_t>(tag));
}

void BatchPublication::OnReport(size_t index, RdKafka::ErrorCode err) {
  if (index >= results_.size() || results_[index] != RdKafka::ERR__IN_PROGRESS) return;
  results_[index] = err == RdKafka::ERR__IN_PROGRESS ? RdKafka::ERR__FAIL : err;
  --outstanding_;
}

bool BatchPublication::Delivered() const {
  return outstanding_ == 0 &&
         std::all_of(results_.begin(), results_.end(), [](RdKafka::ErrorCode e) { return e == RdKafka::ERR_NO_ERROR; });
}

BatchPublication::Retry BatchPublication::PrepareRetry() {
  Retry retry;
  for (size_t i = 0; i < records_.size(); ++i) {
    const RdKafka::ErrorCode err = results_[i];
    if (err == RdKafka::ERR_NO_ERROR || err == RdKafka::ERR__IN_PROGRESS) continue;
    OutgoingRecord& rec = records_[i];
    if (retry.first_error == RdKafka::ERR_NO_ERROR) retry.first_error = err;
    if (rec.is_dlq && rec.value.has_value() && !rec.value->empty() &&
        (err == RdKafka::ERR_MSG_SIZE_TOO_LARGE || err == RdKafka::ERR_RECORD_LIST_TOO_LARGE)) {
      // The original value plus belfry's headers no longer fits: keep the record, drop the value.
      rec.headers.push_back({kDlqValueDroppedHeader, std::to_string(rec.value->size()) + " bytes"});
      rec.value = std::string();
    }
    retry.indices.push_back(i);
  }
  return retry;
}

void BatchPublication::StartRetry(const Retry& retry) {
  ++attempt_;
  for (size_t i : retry.indices) {
    if (results_[i] == RdKafka::ERR__IN_PROGRESS) continue;
    results_[i] = RdKafka::ERR__IN_PROGRESS;
    ++outstanding_;
  }
}

}  // namespace belfry
