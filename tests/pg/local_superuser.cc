#include "local_superuser.h"

#include <dirent.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <vector>

namespace belfry {
namespace {

// The Unix socket directory of the PostgreSQL server listening on `port` on this machine: the
// fifth line of postmaster.pid in the data directory (-D) of a running postgres process.
std::optional<std::string> SocketDirectoryOfPort(const std::string& port) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return std::nullopt;
  std::optional<std::string> found;
  while (dirent* e = readdir(proc)) {
    const std::string pid = e->d_name;
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmdline("/proc/" + pid + "/cmdline", std::ios::binary);
    std::vector<std::string> args;
    for (std::string arg; std::getline(cmdline, arg, '\0');) args.push_back(arg);
    if (args.empty() || args[0].size() < 8 || args[0].compare(args[0].size() - 8, 8, "postgres") != 0)
      continue;
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] != "-D") continue;
      std::ifstream pidfile(args[i + 1] + "/postmaster.pid");
      std::vector<std::string> lines;
      for (std::string line; std::getline(pidfile, line);) lines.push_back(line);
      // 1 pid, 2 data directory, 3 start time, 4 port, 5 socket directory, ...
      if (lines.size() >= 5 && lines[0] == pid && lines[3] == port && !lines[4].empty()) found = lines[4];
    }
    if (found) break;
  }
  closedir(proc);
  return found;
}

}  // namespace

std::optional<std::string> LocalSuperuserUrl(const std::string& url, const std::string& dbname,
                                             bool allow_env_override, std::string* error) {
  if (const char* env = std::getenv("BELFRY_PG_SUPERUSER_URL");
      allow_env_override && env != nullptr && *env != '\0') {
    return WithConninfoOverrides(env, {{"dbname", dbname}});
  }
  const std::string port = ConninfoValue(url, "port", "5432");
  const std::optional<std::string> socket_dir = SocketDirectoryOfPort(port);
  if (!socket_dir) {
    *error = "no PostgreSQL server process on this machine listens on port " + port +
             " (or its postmaster.pid is unreadable): this test needs the local stack's superuser; "
             "run scripts/local-stack up (citus-up for a Citus cluster), or set BELFRY_PG_SUPERUSER_URL";
    return std::nullopt;
  }
  return WithConninfoOverrides("", {{"host", *socket_dir}, {"port", port}, {"user", "postgres"}, {"dbname", dbname}});
}

}  // namespace belfry
