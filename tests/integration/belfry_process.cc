#include "belfry_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace belfry {
namespace {

std::vector<std::string> MergedEnv(const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) env[std::string(*e, eq - *e)] = eq + 1;
  }
  for (const auto& [k, v] : extra) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

pid_t Spawn(const std::vector<std::string>& args, const std::map<std::string, std::string>& env, int out_fd) {
  std::vector<std::string> argv_s = {BelfryBinary()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  const std::vector<std::string> env_s = MergedEnv(env);
  std::vector<char*> argv, envp;
  for (const auto& a : argv_s) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env_s) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_fd, 1);
    dup2(out_fd, 2);
    setpgid(0, 0);
    // Restore default signal handling (gtest or the parent may have changed it).
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string BelfryBinary() {
  // An override to run a scenario against another build (e.g. the "before" of a fix).
  if (const char* other = std::getenv("BELFRY_ITEST_BINARY"); other != nullptr && *other != '\0') return other;
  return BELFRY_BINARY;
}

int RunBelfry(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
              std::string* output) {
  char path[] = "/tmp/belfry-run-XXXXXX";
  const int fd = mkstemp(path);
  const pid_t pid = Spawn(args, env, fd);
  int status = 0;
  waitpid(pid, &status, 0);
  close(fd);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (output) *output = ss.str();
  unlink(path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

BelfryProcess::BelfryProcess(std::map<std::string, std::string> env, std::string log_path)
    : log_path_(std::move(log_path)) {
  const int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  pid_ = Spawn({"serve"}, env, fd);
  close(fd);
}

BelfryProcess::~BelfryProcess() {
  if (!reaped_ && pid_ > 0) Kill();
}

bool BelfryProcess::running() {
  if (reaped_) return false;
  const pid_t r = waitpid(pid_, &status_, WNOHANG);
  if (r == pid_) reaped_ = true;
  return !reaped_;
}

int BelfryProcess::Terminate(int64_t timeout_ms, int64_t* elapsed_ms) {
  const int64_t start = NowMs();
  if (!reaped_) kill(pid_, SIGTERM);
  while (!reaped_ && NowMs() - start < timeout_ms) {
    if (waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
    if (!reaped_) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (elapsed_ms) *elapsed_ms = NowMs() - start;
  if (!reaped_) {
    // Hung: append every thread's stack to the log (when gdb is available) before killing it.
    const std::string cmd = "command -v gdb >/dev/null && gdb -p " + std::to_string(pid_) +
                            " -batch -ex 'thread apply all bt' >>" + log_path_ + " 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      // No gdb, or it could not attach: the log simply has no stacks.
    }
    Kill();
    return -1;
  }
  return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
}

void BelfryProcess::Kill() {
  if (reaped_) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, &status_, 0);
  reaped_ = true;
}

std::string BelfryProcess::Log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool BelfryProcess::WaitForLog(const std::string& needle, int64_t timeout_ms) const {
  const int64_t start = NowMs();
  while (NowMs() - start < timeout_ms) {
    if (Log().find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

int BelfryProcess::AdminPort(int64_t timeout_ms) const {
  const std::string needle = "admin HTTP listening on ";
  const int64_t start = NowMs();
  while (true) {
    const std::string log = Log();
    const size_t at = log.rfind(needle);
    if (at != std::string::npos) {
      const size_t port_at = log.find("(port ", at);
      const size_t eol = log.find('\n', at);
      if (port_at != std::string::npos && (eol == std::string::npos || port_at < eol)) {
        return std::atoi(log.c_str() + port_at + 6);
      }
    }
    if (NowMs() - start >= timeout_ms) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace belfry
