#include "loadtest/metrics_scrape.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace belfry::loadtest {

std::string FetchMetricsText(const std::string& admin) { return HttpGetRaw(admin, "/metrics", ""); }

std::string HttpGetRaw(const std::string& admin, const std::string& target, const std::string& token) {
  const size_t colon = admin.rfind(':');
  if (colon == std::string::npos) return "";
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(admin.substr(0, colon).c_str(), admin.substr(colon + 1).c_str(), &hints, &res) != 0)
    return "";
  const int fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
  const bool connected = fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0;
  freeaddrinfo(res);
  if (!connected) {
    if (fd >= 0) close(fd);
    return "";
  }
  std::string request = "GET " + target + " HTTP/1.0\r\nHost: " + admin + "\r\n";
  if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
  request += "\r\n";
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return "";
  }
  std::string body;
  char buf[65536];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) body.append(buf, static_cast<size_t>(n));
  close(fd);
  return body;
}

std::string AdminAddressFromEnv(const std::string& fallback) {
  const char* listen = std::getenv("BELFRY_ADMIN_LISTEN");
  if (listen == nullptr || *listen == 0) return fallback;
  std::string admin = listen;
  if (admin.rfind("0.0.0.0:", 0) == 0) admin = "127.0.0.1" + admin.substr(7);
  return admin;
}

int64_t SumMetricSamples(std::string_view text, std::string_view metric, std::string_view label) {
  int64_t sum = -1;
  std::string needle(1, '\n');  // not "\n" + std::string(...): GCC 12 warns (-Wrestrict)
  needle.append(metric);
  size_t pos = 0;
  while ((pos = text.find(needle, pos)) != std::string_view::npos) {
    const size_t end = text.find('\n', pos + 1);
    const std::string line(text.substr(pos + 1, end == std::string_view::npos ? end : end - pos - 1));
    pos = end;
    if (line.find(label) == std::string::npos) continue;
    const size_t space = line.rfind(' ');
    sum = std::max<int64_t>(sum, 0) + static_cast<int64_t>(std::strtod(line.c_str() + space + 1, nullptr));
    if (end == std::string_view::npos) break;
  }
  return sum;
}

CumulativeBuckets ParseHistogramBuckets(std::string_view text, std::string_view metric) {
  CumulativeBuckets out;
  std::string needle(1, '\n');
  needle.append(metric).append("_bucket{");
  size_t pos = 0;
  while ((pos = text.find(needle, pos)) != std::string_view::npos) {
    const size_t end = text.find('\n', pos + 1);
    const std::string line(text.substr(pos + 1, end == std::string_view::npos ? end : end - pos - 1));
    pos = end;
    const size_t le = line.find("le=\"");
    const size_t space = line.rfind(' ');
    if (le == std::string::npos || space == std::string::npos) continue;
    const std::string bound = line.substr(le + 4, line.find('"', le + 4) - le - 4);
    const double upper =
        bound == "+Inf" ? std::numeric_limits<double>::infinity() : std::strtod(bound.c_str(), nullptr);
    out.emplace_back(upper, std::strtod(line.c_str() + space + 1, nullptr));
    if (end == std::string_view::npos) break;
  }
  std::sort(out.begin(), out.end());
  return out;
}

double QuantileBetween(const CumulativeBuckets& before, const CumulativeBuckets& after, double q) {
  if (after.empty() || (!before.empty() && before.size() != after.size())) return -1;
  const auto count_at = [&](size_t i) { return after[i].second - (before.empty() ? 0 : before[i].second); };
  const double total = count_at(after.size() - 1);
  if (!(total > 0)) return -1;
  const double rank = q * total;
  double lower_bound = 0;
  double lower_count = 0;
  for (size_t i = 0; i < after.size(); ++i) {
    const double upper = after[i].first;
    const double count = count_at(i);
    if (count >= rank) {
      if (std::isinf(upper)) return lower_bound;
      if (count == lower_count) return upper;
      return lower_bound + (upper - lower_bound) * (rank - lower_count) / (count - lower_count);
    }
    lower_bound = std::isinf(upper) ? lower_bound : upper;
    lower_count = count;
  }
  return lower_bound;
}

}  // namespace belfry::loadtest
