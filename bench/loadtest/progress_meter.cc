#include "loadtest/progress_meter.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>

namespace belfry::loadtest {
namespace {

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr size_t kRateWindowSeconds = 5;

}  // namespace

std::string HumanCount(double v) {
  if (v >= 1e6) return fmt::format("{:.2f}M", v / 1e6);
  if (v >= 1e4) return fmt::format("{:.1f}k", v / 1e3);
  return fmt::format("{:.0f}", v);
}

ProgressMeter::ProgressMeter(std::string mode, std::function<std::string()> extra)
    : mode_(std::move(mode)), extra_(std::move(extra)) {}

ProgressMeter::~ProgressMeter() { Stop(); }

ProgressCounter* ProgressMeter::AddCounter(std::string name, int64_t total) {
  counters_.push_back(std::make_unique<ProgressCounter>(std::move(name), total));
  last_values_.push_back(0);
  return counters_.back().get();
}

void ProgressMeter::Start() {
  start_ns_ = SteadyNs();
  started_ = true;
  thread_ = std::thread([this] { Loop(); });
}

void ProgressMeter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_ || stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  Sample(/*final_line=*/true);
}

double ProgressMeter::elapsed_seconds() const { return static_cast<double>(SteadyNs() - start_ns_) / 1e9; }

void ProgressMeter::Loop() {
  int64_t next = start_ns_;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    next += 1'000'000'000;
    if (cv_.wait_for(lock, std::chrono::nanoseconds(next - SteadyNs()), [this] { return stopping_; })) return;
    lock.unlock();
    Sample(/*final_line=*/false);
    lock.lock();
  }
}

void ProgressMeter::Sample(bool final_line) {
  const double elapsed = elapsed_seconds();
  std::string line = fmt::format("[{} {:.0f}s]", mode_, elapsed);
  double eta = -1;
  for (size_t i = 0; i < counters_.size(); ++i) {
    ProgressCounter& c = *counters_[i];
    const int64_t value = c.Get();
    c.per_second_.push_back(value - last_values_[i]);
    last_values_[i] = value;
    c.recent_.push_back(c.per_second_.back());
    while (c.recent_.size() > kRateWindowSeconds) c.recent_.pop_front();
    double rate = 0;
    for (int64_t v : c.recent_) rate += static_cast<double>(v);
    rate /= static_cast<double>(c.recent_.size());
    if (final_line) rate = elapsed > 0 ? static_cast<double>(value) / elapsed : 0;
    line += fmt::format("{} {} {}", i == 0 ? "" : " |", c.name(), value);
    if (c.total() > 0) line += fmt::format("/{}", c.total());
    line += fmt::format(" {}/s{}", HumanCount(rate), final_line ? " avg" : "");
    if (c.total() > 0) eta = rate > 0 ? static_cast<double>(c.total() - value) / rate : -1;
  }
  if (extra_) line += " | " + extra_();
  if (!final_line && eta >= 0) line += fmt::format(" | ETA {:.0f}s", eta);
  fmt::print(stderr, "{}{}\n", line, final_line ? " (done)" : "");
  std::fflush(stderr);
}

}  // namespace belfry::loadtest
