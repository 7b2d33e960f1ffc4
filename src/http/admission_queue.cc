#include "http/admission_queue.h"

#include <utility>

namespace belfry {
namespace {
thread_local bool tl_shedding = false;
}  // namespace

AdmissionQueue::AdmissionQueue(size_t workers, size_t max_queued, std::function<void()> on_shed)
    : max_queued_(max_queued), on_shed_(std::move(on_shed)) {
  threads_.reserve(workers + 1);
  for (size_t i = 0; i < workers; ++i) threads_.emplace_back([this] { Work(serve_, false); });
  threads_.emplace_back([this] { Work(shed_lane_, true); });
}

AdmissionQueue::~AdmissionQueue() { shutdown(); }

bool AdmissionQueue::OnShedThread() { return tl_shedding; }

void AdmissionQueue::enqueue(std::function<void()> fn) {
  Lane* lane = &serve_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Idle workers take queued connections at once; only the rest wait.
    if (serve_.tasks.size() >= idle_ + max_queued_) lane = &shed_lane_;
    lane->tasks.push_back(std::move(fn));
  }
  lane->ready.notify_one();
  if (lane == &shed_lane_ && on_shed_) on_shed_();
}

void AdmissionQueue::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  serve_.ready.notify_all();
  shed_lane_.ready.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void AdmissionQueue::Work(Lane& lane, bool shedding) {
  tl_shedding = shedding;
  for (;;) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!shedding) ++idle_;
      lane.ready.wait(lock, [&] { return stopping_ || !lane.tasks.empty(); });
      if (!shedding) --idle_;
      if (lane.tasks.empty()) return;  // stopping, and nothing left to serve
      fn = std::move(lane.tasks.front());
      lane.tasks.pop_front();
    }
    fn();
  }
}

}  // namespace belfry
