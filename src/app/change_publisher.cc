#include "app/change_publisher.h"

#include <spdlog/spdlog.h>

#include "core/job_change.h"

namespace belfry {

ChangePublisher::ChangePublisher(JobChangeStore& store, Clock& clock, RecordBatchPublisher publish,
                                 ChangePublisherOptions options)
    : store_(store), clock_(clock), publish_(std::move(publish)), options_(options) {}

StatusOr<int64_t> ChangePublisher::RunOnce() {
  int64_t handed = 0;
  StatusOr<int64_t> n = store_.PublishChanges(options_.batch, [&](const std::vector<JobChange>& changes) {
    std::vector<std::pair<std::string, std::string>> records;
    records.reserve(changes.size());
    for (const JobChange& c : changes) records.emplace_back(c.job_id, EncodeJobChangeJson(c));
    handed = static_cast<int64_t>(records.size());
    return publish_(records);
  });
  if (options_.on_round && handed > 0) options_.on_round(n.ok() ? *n : 0, n.ok() ? 0 : handed);
  return n;
}

void ChangePublisher::Run(StopSignal& stop) {
  while (!stop.requested()) {
    StatusOr<int64_t> n = RunOnce();
    if (!n.ok()) spdlog::warn("change events: {}", n.status().ToString());
    if (n.ok() && *n >= options_.batch) continue;
    if (!clock_.SleepUntil(clock_.NowMs() + options_.idle_poll_ms, stop)) return;
  }
}

}  // namespace belfry
