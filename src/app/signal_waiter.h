// SignalWaiter: turns SIGTERM / SIGINT into a StopSignal request, on a dedicated thread using
// sigwait, so no work happens in a signal handler.
#pragma once

#include <csignal>
#include <thread>

#include "belfry/stop_signal.h"

namespace belfry {

class SignalWaiter final {
 public:
  // Blocks SIGTERM, SIGINT and SIGPIPE in the calling thread (call before starting other
  // threads so they inherit the mask) and starts the waiting thread.
  explicit SignalWaiter(StopSignal& stop);
  ~SignalWaiter();
  SignalWaiter(const SignalWaiter&) = delete;
  SignalWaiter& operator=(const SignalWaiter&) = delete;

  int signal_received() const { return received_; }

 private:
  StopSignal& stop_;
  sigset_t set_{};
  std::thread thread_;
  volatile int received_ = 0;
};

}  // namespace belfry
