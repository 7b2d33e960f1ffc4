#include "app/config_parser.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace belfry {
namespace {

enum class Kind { kString, kInt, kDuration, kIntList, kStringList, kStringMap, kPolicy };

struct Key {
  const char* path;
  Kind kind;
};

// Every key the config accepts. The environment variable of a key is derived from its path.
constexpr Key kKeys[] = {
    {"database_url", Kind::kString},
    {"node_id", Kind::kString},
    {"migrations_dir", Kind::kString},
    {"kafka.brokers", Kind::kString},
    {"kafka.commands_topic", Kind::kString},
    {"kafka.dlq_topic", Kind::kString},
    {"kafka.results_topic", Kind::kString},
    {"kafka.executions_topic", Kind::kString},
    {"kafka.executions_dlq_topic", Kind::kString},
    {"kafka.executions_group_id", Kind::kString},
    {"kafka.group_id", Kind::kString},
    {"kafka.command_batch_max", Kind::kInt},
    {"kafka.command_batch_wait", Kind::kDuration},
    {"kafka.properties", Kind::kStringMap},
    {"scheduler.enabled", Kind::kString},
    {"scheduler.shard_count", Kind::kInt},
    {"scheduler.tick", Kind::kDuration},
    {"scheduler.intervals", Kind::kIntList},
    {"scheduler.misfire_policy", Kind::kPolicy},
    {"scheduler.max_catchup", Kind::kDuration},
    {"scheduler.misfire_threshold", Kind::kDuration},
    {"scheduler.claim_lease", Kind::kDuration},
    {"scheduler.workers", Kind::kInt},
    {"scheduler.firings_in_flight", Kind::kInt},
    {"scheduler.catch_up_rate", Kind::kInt},
    {"scheduler.catch_up_chunk_minutes", Kind::kInt},
    {"scheduler.one_shot_retention", Kind::kDuration},
    {"commands.max_details_bytes", Kind::kInt},
    {"commands.allowed_topics", Kind::kStringList},
    {"executions.enabled", Kind::kString},
    {"executions.keep_per_job", Kind::kInt},  // removed in issue 16: an error naming executions.retention
    {"executions.retention", Kind::kDuration},
    {"executions.trim_interval", Kind::kDuration},
    {"executions.batch_max", Kind::kInt},
    {"executions.max_error_bytes", Kind::kInt},
    {"admin.listen", Kind::kString},
    {"admin.token", Kind::kString},
    {"admin.db_sessions", Kind::kInt},
    {"admin.read_wait", Kind::kDuration},
    {"admin.statement_timeout", Kind::kDuration},
    {"admin.worker_threads", Kind::kInt},
    {"admin.max_queued_connections", Kind::kInt},
    {"log.level", Kind::kString},
    {"log.format", Kind::kString},
};

std::string EnvNameFor(std::string_view path) {
  std::string name = "BELFRY_";
  for (char c : path) name.push_back(c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  return name;
}

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Status Bad(const std::string& path, const std::string& why) {
  return Status::Invalid("config", fmt::format("config key '{}': {}", path, why));
}

Status ScalarString(const YAML::Node& n, const std::string& path, std::string* out) {
  if (!n.IsScalar()) return Bad(path, "expected a string");
  *out = n.as<std::string>();
  return Status::Ok();
}

Status ParseInt(const std::string& text, const std::string& path, int64_t* out) {
  if (text.empty()) return Bad(path, "expected an integer");
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return Bad(path, fmt::format("'{}' is not an integer", text));
  *out = v;
  return Status::Ok();
}

// Applies one key's YAML value to the config.
Status Apply(const Key& key, const YAML::Node& n, Config* c) {
  const std::string path = key.path;
  std::string s;
  int64_t i = 0;
  switch (key.kind) {
    case Kind::kString:
    case Kind::kInt:
    case Kind::kDuration:
    case Kind::kPolicy:
      if (Status st = ScalarString(n, path, &s); !st.ok()) return st;
      break;
    default:
      break;
  }
  if (key.kind == Kind::kInt) {
    if (Status st = ParseInt(s, path, &i); !st.ok()) return st;
  }
  if (key.kind == Kind::kDuration) {
    auto d = ParseDurationMs(s);
    if (!d) return Bad(path, fmt::format("'{}' is not a duration like 500ms, 30s, 15m or 1h", s));
    i = *d;
  }
  if (path == "database_url") c->database_url = s;
  else if (path == "node_id") c->node_id = s;
  else if (path == "migrations_dir") c->migrations_dir = s;
  else if (path == "kafka.brokers") c->kafka.brokers = s;
  else if (path == "kafka.commands_topic") c->kafka.commands_topic = s;
  else if (path == "kafka.dlq_topic") c->kafka.dlq_topic = s;
  else if (path == "kafka.results_topic") c->kafka.results_topic = s;
  else if (path == "kafka.group_id") c->kafka.group_id = s;
  else if (path == "kafka.executions_topic") c->kafka.executions_topic = s;
  else if (path == "kafka.executions_dlq_topic") c->kafka.executions_dlq_topic = s;
  else if (path == "kafka.executions_group_id") c->kafka.executions_group_id = s;
  else if (path == "scheduler.enabled") {
    if (s == "true") c->scheduler.enabled = true;
    else if (s == "false") c->scheduler.enabled = false;
    else return Bad(path, fmt::format("'{}' is not true or false", s));
  } else if (path == "executions.enabled") {
    if (s == "true") c->executions.enabled = true;
    else if (s == "false") c->executions.enabled = false;
    else return Bad(path, fmt::format("'{}' is not true or false", s));
  } else if (path == "executions.keep_per_job") {
    return Bad(path, "removed: history is now kept by time, in daily partitions; set executions.retention "
                     "(a duration, default 7d) instead (docs/executions.md, \"History\")");
  } else if (path == "executions.retention") c->executions.retention_ms = i;
  else if (path == "executions.trim_interval") c->executions.trim_interval_ms = i;
  else if (path == "executions.batch_max") c->executions.batch_max = static_cast<int32_t>(i);
  else if (path == "executions.max_error_bytes") c->executions.max_error_bytes = i;
  else if (path == "kafka.command_batch_max") c->kafka.command_batch_max = static_cast<int32_t>(i);
  else if (path == "kafka.command_batch_wait") c->kafka.command_batch_wait_ms = i;
  else if (path == "kafka.properties") {
    if (!n.IsMap()) return Bad(path, "expected a map of librdkafka settings");
    for (const auto& kv : n) {
      if (!kv.second.IsScalar()) return Bad(path + "." + kv.first.as<std::string>(), "expected a string");
      c->kafka.properties[kv.first.as<std::string>()] = kv.second.as<std::string>();
    }
  } else if (path == "scheduler.shard_count") c->scheduler.shard_count = static_cast<int32_t>(i);
  else if (path == "scheduler.tick") c->scheduler.tick_ms = i;
  else if (path == "scheduler.intervals") {
    std::vector<std::string> items;
    if (n.IsSequence()) {
      for (const auto& e : n) items.push_back(e.as<std::string>());
    } else if (n.IsScalar()) {
      items = SplitComma(n.as<std::string>());
    } else {
      return Bad(path, "expected a list of minutes");
    }
    c->scheduler.intervals.clear();
    for (const std::string& item : items) {
      int64_t v = 0;
      if (Status st = ParseInt(item, path, &v); !st.ok()) return st;
      c->scheduler.intervals.push_back(static_cast<int32_t>(v));
    }
  } else if (path == "scheduler.misfire_policy") {
    if (s == "fire_all") c->scheduler.misfire_policy = MisfirePolicy::kFireAll;
    else if (s == "coalesce") c->scheduler.misfire_policy = MisfirePolicy::kCoalesce;
    else if (s == "skip") c->scheduler.misfire_policy = MisfirePolicy::kSkip;
    else return Bad(path, fmt::format("'{}' is not one of fire_all, coalesce, skip", s));
  } else if (path == "scheduler.max_catchup") c->scheduler.max_catchup_ms = i;
  else if (path == "scheduler.misfire_threshold") c->scheduler.misfire_threshold_ms = i;
  else if (path == "scheduler.one_shot_retention") c->scheduler.one_shot_retention_ms = i;
  else if (path == "scheduler.claim_lease") c->scheduler.claim_lease_ms = i;
  else if (path == "scheduler.workers") c->scheduler.workers = static_cast<int32_t>(i);
  else if (path == "scheduler.firings_in_flight") c->scheduler.firings_in_flight = static_cast<int32_t>(i);
  else if (path == "scheduler.catch_up_rate") c->scheduler.catch_up_rate = i;
  else if (path == "scheduler.catch_up_chunk_minutes") {
    c->scheduler.catch_up_chunk_minutes = static_cast<int32_t>(std::clamp<int64_t>(i, 0, 1000));
  }
  else if (path == "commands.max_details_bytes") c->commands.max_details_bytes = i;
  else if (path == "commands.allowed_topics") {
    c->commands.allowed_topics.clear();
    if (n.IsSequence()) {
      for (const auto& e : n) c->commands.allowed_topics.push_back(e.as<std::string>());
    } else if (n.IsScalar()) {
      c->commands.allowed_topics = SplitComma(n.as<std::string>());
    } else {
      return Bad(path, "expected a list of topic patterns");
    }
  } else if (path == "admin.listen") c->admin.listen = s;
  else if (path == "admin.token") c->admin.token = s;
  else if (path == "admin.db_sessions") c->admin.db_sessions = static_cast<int32_t>(i);
  else if (path == "admin.read_wait") c->admin.read_wait_ms = i;
  else if (path == "admin.statement_timeout") c->admin.statement_timeout_ms = i;
  else if (path == "admin.worker_threads") c->admin.worker_threads = static_cast<int32_t>(i);
  else if (path == "admin.max_queued_connections") c->admin.max_queued_connections = static_cast<int32_t>(i);
  else if (path == "log.level") c->log.level = s;
  else if (path == "log.format") c->log.format = s;
  return Status::Ok();
}

// Walks the YAML tree, rejecting any key not in kKeys.
Status Walk(const YAML::Node& node, const std::string& prefix, Config* c) {
  if (!node.IsMap()) return Bad(prefix.empty() ? "<root>" : prefix, "expected a map");
  for (const auto& kv : node) {
    const std::string name = kv.first.as<std::string>();
    const std::string path = prefix.empty() ? name : prefix + "." + name;
    const Key* key = nullptr;
    bool is_section = false;
    for (const Key& k : kKeys) {
      if (path == k.path) key = &k;
      if (std::string_view(k.path).starts_with(path + ".")) is_section = true;
    }
    if (key) {
      if (kv.second.IsNull()) continue;  // explicit null = default
      if (Status st = Apply(*key, kv.second, c); !st.ok()) return st;
    } else if (is_section) {
      if (Status st = Walk(kv.second, path, c); !st.ok()) return st;
    } else {
      return Bad(path, "unknown key");
    }
  }
  return Status::Ok();
}

}  // namespace

std::optional<int64_t> ParseDurationMs(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 12) return std::nullopt;
  int64_t v = 0;
  for (size_t i = 0; i < digits; ++i) v = v * 10 + (text[i] - '0');
  const std::string_view unit = text.substr(digits);
  if (unit == "ms") return v;
  if (unit == "s") return v * 1000;
  if (unit == "m") return v * 60'000;
  if (unit == "h") return v * 3'600'000;
  if (unit == "d") return v * 86'400'000;
  return std::nullopt;
}

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

const char* MisfirePolicyName(MisfirePolicy p) {
  switch (p) {
    case MisfirePolicy::kFireAll:
      return "fire_all";
    case MisfirePolicy::kCoalesce:
      return "coalesce";
    case MisfirePolicy::kSkip:
      return "skip";
  }
  return "unknown";
}

Status ValidateConfig(const Config& c) {
  const SchedulerConfig& s = c.scheduler;
  if (s.shard_count <= 0 || s.shard_count > 6000) return Bad("scheduler.shard_count", "must be in 1..6000");
  if (s.tick_ms <= 0) return Bad("scheduler.tick", "must be positive");
  if (s.shard_count * s.tick_ms != 60'000) {
    return Bad("scheduler.tick", fmt::format("shard_count ({}) x tick ({}ms) must equal 60s, got {}ms", s.shard_count,
                                             s.tick_ms, s.shard_count * s.tick_ms));
  }
  if (s.intervals.empty()) return Bad("scheduler.intervals", "must not be empty");
  std::set<int32_t> seen;
  for (int32_t i : s.intervals) {
    if (i <= 0 || 1440 % i != 0) {
      return Bad("scheduler.intervals", fmt::format("{} does not divide 1440 (a UTC day in minutes)", i));
    }
    if (!seen.insert(i).second) return Bad("scheduler.intervals", fmt::format("{} is listed twice", i));
  }
  if (s.max_catchup_ms < s.misfire_threshold_ms) {
    return Bad("scheduler.max_catchup", "must be at least scheduler.misfire_threshold");
  }
  if (s.claim_lease_ms < 500) return Bad("scheduler.claim_lease", "must be at least 500ms");
  if (c.executions.retention_ms < 86'400'000 || c.executions.retention_ms > 3660LL * 86'400'000) {
    return Bad("executions.retention", "must be in 1d..3660d (whole days are dropped at a time)");
  }
  if (c.executions.trim_interval_ms < 1000) return Bad("executions.trim_interval", "must be at least 1s");
  if (c.executions.batch_max < 1 || c.executions.batch_max > 100'000) {
    return Bad("executions.batch_max", "must be in 1..100000");
  }
  if (c.executions.max_error_bytes < 16 || c.executions.max_error_bytes > 65'536) {
    return Bad("executions.max_error_bytes", "must be in 16..65536");
  }
  if (s.one_shot_retention_ms < s.max_catchup_ms + 60'000) {
    return Bad("scheduler.one_shot_retention", "must be at least scheduler.max_catchup plus one minute");
  }
  if (s.workers < 1 || s.workers > 64) return Bad("scheduler.workers", "must be in 1..64");
  if (s.firings_in_flight < 1 || s.firings_in_flight > 64) {
    return Bad("scheduler.firings_in_flight", "must be in 1..64");
  }
  if (s.catch_up_rate < 0 || s.catch_up_rate > 100'000'000) {
    return Bad("scheduler.catch_up_rate", "must be in 0..100000000 triggers/s (0 = unlimited)");
  }
  if (s.catch_up_chunk_minutes < 1 || s.catch_up_chunk_minutes > 60) {
    return Bad("scheduler.catch_up_chunk_minutes", "must be in 1..60");
  }
  if (c.kafka.command_batch_max < 1) return Bad("kafka.command_batch_max", "must be positive");
  if (c.commands.max_details_bytes < 2 || c.commands.max_details_bytes > 900 * 1024) {
    return Bad("commands.max_details_bytes", "must be in 2..921600");
  }
  if (c.admin.db_sessions < 1 || c.admin.db_sessions > 256) return Bad("admin.db_sessions", "must be in 1..256");
  if (c.admin.read_wait_ms < 1 || c.admin.read_wait_ms > 60'000) return Bad("admin.read_wait", "must be in 1ms..60s");
  if (c.admin.statement_timeout_ms < 10 || c.admin.statement_timeout_ms > 600'000) {
    return Bad("admin.statement_timeout", "must be in 10ms..10m");
  }
  if (c.admin.worker_threads < 1 || c.admin.worker_threads > 4096) return Bad("admin.worker_threads", "must be in 1..4096");
  if (c.admin.max_queued_connections < 0 || c.admin.max_queued_connections > 65'536) {
    return Bad("admin.max_queued_connections", "must be in 0..65536");
  }
  if (c.log.format != "text" && c.log.format != "json") return Bad("log.format", "must be text or json");
  static const std::set<std::string> kLevels = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  if (!kLevels.count(c.log.level)) return Bad("log.level", "must be one of trace, debug, info, warn, error");
  if (c.database_url.empty()) return Bad("database_url", "must be set");
  if (c.kafka.brokers.empty()) return Bad("kafka.brokers", "must be set");
  return Status::Ok();
}

StatusOr<Config> ParseConfig(const std::string& yaml_text, const EnvLookup& env) {
  YAML::Node root;
  try {
    root = yaml_text.empty() ? YAML::Node(YAML::NodeType::Map) : YAML::Load(yaml_text);
    if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  } catch (const YAML::Exception& e) {
    return Status::Invalid("config", fmt::format("config is not valid YAML: {}", e.what()));
  }
  Config c;
  try {
    if (Status st = Walk(root, "", &c); !st.ok()) return st;
    for (const Key& k : kKeys) {
      if (k.kind == Kind::kStringMap) continue;
      const std::string name = EnvNameFor(k.path);
      auto v = env(name);
      if (!v) continue;
      if (Status st = Apply(k, YAML::Node(*v), &c); !st.ok()) {
        return Status::Invalid("config", fmt::format("environment {}: {}", name, st.message()));
      }
    }
  } catch (const YAML::Exception& e) {
    return Status::Invalid("config", fmt::format("config has a value of the wrong shape: {}", e.what()));
  }
  if (Status st = ValidateConfig(c); !st.ok()) return st;
  return c;
}

StatusOr<Config> LoadConfig(const std::string& path, const EnvLookup& env) {
  std::string text;
  if (!path.empty()) {
    std::ifstream in(path);
    if (!in) return Status::Invalid("config", fmt::format("cannot read config file '{}'", path));
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  return ParseConfig(text, env);
}

}  // namespace belfry
