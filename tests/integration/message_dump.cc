#include "message_dump.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "core/json_writer.h"

namespace belfry {
namespace {

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t v = 0;
    for (size_t j = 0; j < 3; ++j) v = (v << 8) | (j < n ? static_cast<unsigned char>(bytes[i + j]) : 0u);
    for (size_t j = 0; j < 4; ++j) out.push_back(j <= n ? kAlphabet[(v >> (18 - 6 * j)) & 0x3f] : '=');
  }
  return out;
}

void AppendBase64OrNull(std::string* out, const std::optional<std::string>& bytes) {
  if (!bytes) {
    out->append("null");
    return;
  }
  out->push_back('"');
  out->append(Base64(*bytes));
  out->push_back('"');
}

const char* DumpPath() {
  static const char* const path = std::getenv("BELFRY_MESSAGE_DUMP");
  return path != nullptr && *path != '\0' ? path : nullptr;
}

// One dump line; `position` is the produced record's (partition, offset), if it is one.
void AppendRecord(std::string_view kind, std::string_view topic, std::optional<std::pair<int32_t, int64_t>> position,
                  const std::optional<std::string>& key, const std::optional<std::string>& value,
                  const std::map<std::string, std::string>& headers) {
  const char* path = DumpPath();
  if (path == nullptr) return;
  std::string line = "{\"kind\":";
  AppendJsonString(&line, kind);
  line.append(",\"topic\":");
  AppendJsonString(&line, topic);
  if (position) {
    line.append(",\"partition\":" + std::to_string(position->first));
    line.append(",\"offset\":" + std::to_string(position->second));
  }
  line.append(",\"key\":");
  AppendBase64OrNull(&line, key);
  line.append(",\"value\":");
  AppendBase64OrNull(&line, value);
  line.append(",\"headers\":{");
  bool first = true;
  for (const auto& [name, header] : headers) {
    if (!first) line.push_back(',');
    first = false;
    AppendJsonString(&line, name);
    line.push_back(':');
    line.push_back('"');
    line.append(Base64(header));
    line.push_back('"');
  }
  line.append("}}\n");

  // One write(2) per line on an O_APPEND descriptor: lines from tests running in parallel
  // processes do not interleave.
  static std::mutex mu;
  static bool reported = false;
  std::lock_guard<std::mutex> lock(mu);
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const bool ok = fd >= 0 && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  if (fd >= 0) ::close(fd);
  if (!ok && !reported) {
    reported = true;
    std::fprintf(stderr, "BELFRY_MESSAGE_DUMP: cannot append to %s\n", path);
  }
}

}  // namespace

void DumpConsumedRecord(std::string_view kind, std::string_view topic, const std::optional<std::string>& key,
                        const std::optional<std::string>& value, const std::map<std::string, std::string>& headers) {
  AppendRecord(kind, topic, std::nullopt, key, value, headers);
}

void DumpProducedRecord(std::string_view topic, int32_t partition, int64_t offset,
                        const std::optional<std::string>& key, const std::optional<std::string>& value,
                        const std::vector<std::pair<std::string, std::string>>& headers) {
  if (DumpPath() == nullptr) return;
  AppendRecord("produced", topic, std::make_pair(partition, offset), key, value,
               std::map<std::string, std::string>(headers.begin(), headers.end()));
}

}  // namespace belfry
