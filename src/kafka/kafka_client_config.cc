#include "kafka/kafka_client_config.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <random>

namespace belfry {

std::string GroupInstanceId(std::string_view node_id, std::string_view role) {
  if (node_id.empty()) return std::string();
  std::string out;
  for (char c : node_id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    out.push_back(ok ? c : '_');
  }
  out.push_back('-');
  out.append(role);
  if (out.size() > 249) out.resize(249);
  return out;
}
namespace {

// Values are never echoed: pass-through properties may carry secrets (sasl.password, keys).
Status SetError(const std::string& key, const std::string& errstr) {
  return Status::Invalid("kafka_config", "librdkafka property '" + key + "': " + errstr);
}

spdlog::level::level_enum LevelForSyslog(int level) {
  // librdkafka uses syslog(3) severities: 0 emerg .. 7 debug. It logs transient connection
  // failures at 3 (err); those are warnings for a service that rides them out.
  if (level <= 2) return spdlog::level::err;
  if (level <= 4) return spdlog::level::warn;
  if (level <= 6) return spdlog::level::info;
  return spdlog::level::debug;
}

void CLogCallback(const rd_kafka_t* rk, int level, const char* fac, const char* buf) {
  spdlog::log(LevelForSyslog(level), "kafka[{}] {}: {}", rk != nullptr ? rd_kafka_name(rk) : "?", fac, buf);
}

template <typename SetFn>
Status ApplyAll(const KafkaConfig& config, const std::string& client_id, const KafkaSettings& settings,
                SetFn&& set) {
  if (Status s = set("bootstrap.servers", config.brokers); !s.ok()) return s;
  if (Status s = set("client.id", client_id); !s.ok()) return s;
  for (const auto& [key, value] : settings) {
    if (Status s = set(key, value); !s.ok()) return s;
  }
  for (const auto& [key, value] : config.properties) {
    if (Status s = set(key, value); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<RdKafka::Conf>> BuildKafkaConf(const KafkaConfig& config,
                                                        const std::string& client_id,
                                                        const KafkaSettings& settings,
                                                        RdKafka::EventCb* event_cb) {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string errstr;
  if (event_cb != nullptr && conf->set("event_cb", event_cb, errstr) != RdKafka::Conf::CONF_OK) {
    return SetError("event_cb", errstr);
  }
  Status s = ApplyAll(config, client_id, settings, [&](const std::string& key, const std::string& value) {
    if (conf->set(key, value, errstr) != RdKafka::Conf::CONF_OK) return SetError(key, errstr);
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return conf;
}

StatusOr<RdKafkaConfPtr> BuildKafkaCConf(const KafkaConfig& config, const std::string& client_id,
                                         const KafkaSettings& settings) {
  RdKafkaConfPtr conf(rd_kafka_conf_new());
  rd_kafka_conf_set_log_cb(conf.get(), &CLogCallback);
  std::array<char, 512> errstr{};
  Status s = ApplyAll(config, client_id, settings, [&](const std::string& key, const std::string& value) {
    if (rd_kafka_conf_set(conf.get(), key.c_str(), value.c_str(), errstr.data(), errstr.size()) !=
        RD_KAFKA_CONF_OK) {
      return SetError(key, errstr.data());
    }
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return conf;
}

std::string UniqueGroupSuffix() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  return std::to_string(::getpid()) + "-" + std::to_string(salt % 1000000007) + "-" +
         std::to_string(counter.fetch_add(1));
}

void KafkaEventLogger::event_cb(RdKafka::Event& event) {
  switch (event.type()) {
    case RdKafka::Event::EVENT_LOG:
      spdlog::log(LevelForSyslog(static_cast<int>(event.severity())), "kafka[{}] {}: {}", client_id_,
                  event.fac(), event.str());
      break;
    case RdKafka::Event::EVENT_ERROR:
      spdlog::log(event.fatal() ? spdlog::level::err : spdlog::level::warn, "kafka[{}] {}error: {} ({})",
                  client_id_, event.fatal() ? "FATAL " : "", RdKafka::err2str(event.err()), event.str());
      if (on_error_) on_error_(event);
      break;
    default:
      break;
  }
}

}  // namespace belfry
