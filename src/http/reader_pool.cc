#include "http/reader_pool.h"

#include <utility>

namespace belfry {

ReaderPool::ReaderPool(std::vector<ReadSession> sessions, std::chrono::milliseconds max_wait)
    : sessions_(std::move(sessions)), max_wait_(max_wait) {
  free_.reserve(sessions_.size());
  for (size_t i = sessions_.size(); i > 0; --i) free_.push_back(i - 1);
}

ReaderPool::Lease::~Lease() {
  if (pool_ != nullptr) pool_->Return(index_);
}

const ReadSession& ReaderPool::Lease::operator*() const { return pool_->sessions_[index_]; }

std::optional<ReaderPool::Lease> ReaderPool::Borrow() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!freed_.wait_for(lock, max_wait_, [this] { return !free_.empty(); })) return std::nullopt;
  const size_t index = free_.back();
  free_.pop_back();
  return Lease(this, index);
}

void ReaderPool::Return(size_t index) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(index);
  }
  freed_.notify_one();
}

}  // namespace belfry
