#include "core/broker_error_streaks.h"

namespace belfry {

bool BrokerErrorStreaks::OnBrokerError(const std::string& topic, EpochMs now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (streaks_.size() > 10'000) streaks_.clear();  // bound the memory
  Streak& s = streaks_[topic];
  if (s.last == 0 || now - s.last > gap_ms_) s.first = now;
  s.last = now;
  return now - s.first >= after_ms_ && last_delivered_ > s.first;
}

void BrokerErrorStreaks::OnDelivered(EpochMs now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (now > last_delivered_) last_delivered_ = now;
}

}  // namespace belfry
