// BelfryProcess: a belfry node the harness starts and stops itself (burst mode), and reading
// a process's peak resident set size.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace belfry::loadtest {

class BelfryProcess final {
 public:
  // Starts `binary args...` with stdout and stderr appended to `log_path` and the environment
  // of this process plus `env` (which overrides). Throws std::runtime_error if it cannot start.
  BelfryProcess(const std::string& binary, const std::vector<std::string>& args,
                const std::vector<std::pair<std::string, std::string>>& env, const std::string& log_path);
  // Stops the process (as Stop(10000)) if it is still running.
  ~BelfryProcess();
  BelfryProcess(const BelfryProcess&) = delete;
  BelfryProcess& operator=(const BelfryProcess&) = delete;

  pid_t pid() const { return pid_; }
  // False once the process has exited; then exit_status() says how.
  bool Running();
  // SIGTERM, then SIGKILL after `timeout_ms`. Returns the exit status text. Idempotent.
  std::string Stop(int timeout_ms);
  std::string exit_status() const { return exit_status_; }

 private:
  void Reap(int status);

  pid_t pid_ = -1;
  bool exited_ = false;
  std::string exit_status_;
};

// `--belfry-args "a b c"` as the argument list of a BelfryProcess (split on whitespace).
std::vector<std::string> SplitArgs(const std::string& text);

// VmHWM (peak resident set) of a live process in KiB, from /proc/PID/status; -1 if unknown.
int64_t PeakRssKb(pid_t pid);
// VmRSS (current resident set) of a live process in KiB, from /proc/PID/status; -1 if unknown.
int64_t CurrentRssKb(pid_t pid);
// CPU time (user + system) of a process so far in seconds, from /proc/PID/stat; -1 if unknown.
double ProcessCpuSeconds(pid_t pid);

}  // namespace belfry::loadtest
