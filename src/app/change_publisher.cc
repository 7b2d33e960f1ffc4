#include "app/change_publisher.h"

#include <spdlog/spdlog.h>

#include "core/job_change.h"

namespace belfry {

ChangePublisher::ChangePublisher(JobStore& store, Clock& clock, RecordBatchPublisher publish,
                                 ChangePublisherOptions options)
    : store_(store), clock_(clock), publish_(std::move(publish)), options_(options) {}

StatusOr<int64_t> ChangePublisher::RunOnce() {
  return store_.PublishChanges(options_.batch, [&](const std::vector<JobChange>& changes) {
    std::vector<std::pair<std::string, std::string>> records;
    records.reserve(changes.size());
    for (const JobChange& c : changes) records.emplace_back(c.job_id, EncodeJobChangeJson(c));
    return publish_(records);
  });
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
