#include "loadtest/host_snapshot.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace belfry::loadtest {

nlohmann::ordered_json HostSnapshot() {
  nlohmann::ordered_json j;
  j["nproc"] = std::thread::hardware_concurrency();
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      j["cpu"] = colon == std::string::npos ? line : line.substr(colon + 2);
      break;
    }
  }
  const double pages = static_cast<double>(sysconf(_SC_PHYS_PAGES));
  const double page_size = static_cast<double>(sysconf(_SC_PAGESIZE));
  j["mem_gb"] = std::round(pages * page_size / (1024.0 * 1024 * 1024) * 10) / 10;
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) j["loadavg"] = {load[0], load[1], load[2]};
  return j;
}

}  // namespace belfry::loadtest
