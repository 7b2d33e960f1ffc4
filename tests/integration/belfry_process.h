// BelfryProcess: runs the real `belfry` binary as a child process for integration tests, with
// its own environment (database, topics, group), its log in a file, and signal control.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace belfry {

// Runs `belfry <args>` to completion with extra environment; returns the exit code and puts
// stdout+stderr in *output.
int RunBelfry(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
              std::string* output);

class BelfryProcess final {
 public:
  // Starts `belfry serve`. The log goes to `log_path`.
  BelfryProcess(std::map<std::string, std::string> env, std::string log_path);
  ~BelfryProcess();  // SIGKILLs the child if still running
  BelfryProcess(const BelfryProcess&) = delete;
  BelfryProcess& operator=(const BelfryProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  // Sends SIGTERM and waits up to `timeout_ms`; returns the exit code, 128+signal if it died
  // from a signal, or -1 on timeout (the child's thread stacks are then appended to its log if
  // gdb is installed, and it is killed). Sets *elapsed_ms.
  int Terminate(int64_t timeout_ms, int64_t* elapsed_ms = nullptr);
  void Kill();
  std::string Log() const;
  // Waits until the log contains `needle`; false on timeout.
  bool WaitForLog(const std::string& needle, int64_t timeout_ms) const;
  // The admin HTTP port from the last "admin HTTP listening on ... (port N)" log line, waiting
  // up to `timeout_ms` for it; -1 if it never appears.
  int AdminPort(int64_t timeout_ms = 30'000) const;
  const std::string& log_path() const { return log_path_; }

 private:
  pid_t pid_ = -1;
  std::string log_path_;
  int status_ = 0;
  bool reaped_ = false;
};

// The compiled-in path of the belfry binary, or $BELFRY_ITEST_BINARY when set (a "before" run).
std::string BelfryBinary();

}  // namespace belfry
