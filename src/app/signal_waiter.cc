#include "app/signal_waiter.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

namespace belfry {

SignalWaiter::SignalWaiter(StopSignal& stop) : stop_(stop) {
  sigemptyset(&set_);
  sigaddset(&set_, SIGTERM);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGUSR1);  // used only to wake the waiter at destruction
  pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  signal(SIGPIPE, SIG_IGN);
  thread_ = std::thread([this] {
    while (true) {
      int sig = 0;
      if (sigwait(&set_, &sig) != 0) continue;
      if (sig == SIGUSR1) return;
      received_ = sig;
      spdlog::info("received {}, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      stop_.Request();
    }
  });
}

SignalWaiter::~SignalWaiter() {
  pthread_kill(thread_.native_handle(), SIGUSR1);
  thread_.join();
}

}  // namespace belfry
