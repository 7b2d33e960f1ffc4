#include "app/config_parser.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <utility>

#include "core/slot_math.h"

namespace belfry {
namespace {

constexpr int64_t kSecond = 1000;
constexpr int64_t kMinute = 60 * kSecond;
constexpr int64_t kHour = 60 * kMinute;
constexpr int64_t kDay = 24 * kHour;

Status Bad(const std::string& path, const std::string& why) {
  return Status::Invalid("config", fmt::format("config key '{}': {}", path, why));
}

enum class NumberError { kNone, kSyntax, kOverflow };

// Base-10 integer (strtoll syntax: optional sign, digits, nothing after).
NumberError ParseInteger(const std::string& text, int64_t* out) {
  if (text.empty()) return NumberError::kSyntax;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0') return NumberError::kSyntax;
  if (errno == ERANGE) return NumberError::kOverflow;
  *out = v;
  return NumberError::kNone;
}

NumberError ParseDuration(std::string_view text, int64_t* ms) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return NumberError::kSyntax;
  const std::string_view unit = text.substr(digits);
  int64_t scale = 0;
  if (unit == "ms") {
    scale = 1;
  } else if (unit == "s") {
    scale = kSecond;
  } else if (unit == "m") {
    scale = kMinute;
  } else if (unit == "h") {
    scale = kHour;
  } else if (unit == "d") {
    scale = kDay;
  } else {
    return NumberError::kSyntax;
  }
  int64_t v = 0;
  for (size_t i = 0; i < digits; ++i) {
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, text[i] - '0', &v)) {
      return NumberError::kOverflow;
    }
  }
  if (__builtin_mul_overflow(v, scale, &v)) return NumberError::kOverflow;
  *ms = v;
  return NumberError::kNone;
}

// `ms` in the largest unit that divides it: 500ms, 30s, 15m, 7d.
std::string DurationText(int64_t ms) {
  for (const auto& [scale, unit] : {std::pair{kDay, "d"}, {kHour, "h"}, {kMinute, "m"}, {kSecond, "s"}}) {
    if (ms != 0 && ms % scale == 0) return fmt::format("{}{}", ms / scale, unit);
  }
  return fmt::format("{}ms", ms);
}

Status ReadScalar(const YAML::Node& n, const std::string& path, std::string* out) {
  if (!n.IsScalar()) return Bad(path, "expected a single value");
  *out = n.as<std::string>();
  return Status::Ok();
}

Status ReadInteger(const std::string& text, const std::string& path, int64_t lo, int64_t hi, int64_t* out) {
  const NumberError e = ParseInteger(text, out);
  if (e == NumberError::kSyntax) return Bad(path, fmt::format("'{}' is not an integer", text));
  if (e == NumberError::kOverflow || *out < lo || *out > hi) {
    return Bad(path, fmt::format("{} is out of range [{}, {}]", text, lo, hi));
  }
  return Status::Ok();
}

// Items of a YAML sequence, or of a comma-separated scalar (the environment's form of a list).
Status ReadList(const YAML::Node& n, const std::string& path, std::vector<std::string>* out) {
  out->clear();
  if (n.IsSequence()) {
    for (const auto& e : n) {
      if (!e.IsScalar()) return Bad(path, "expected a list of single values");
      out->push_back(e.as<std::string>());
    }
    return Status::Ok();
  }
  if (!n.IsScalar()) return Bad(path, "expected a list");
  std::stringstream ss(n.as<std::string>());
  for (std::string item; std::getline(ss, item, ',');) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out->push_back(item);
  }
  return Status::Ok();
}

// One key of a config struct S: its name in the section, what it takes and where it goes.
template <class S>
struct Field {
  const char* name;
  ConfigKeyKind kind;
  int64_t min = 0;
  int64_t max = 0;
  // Reads `value` (a YAML node, or a scalar holding an environment variable) into `out`.
  std::function<Status(const std::string& path, const YAML::Node& value, S* out)> set;
};

template <class S>
Field<S> StringKey(const char* name, std::string S::*member) {
  return {name, ConfigKeyKind::kString, 0, 0, [member](const std::string& path, const YAML::Node& n, S* out) {
            return ReadScalar(n, path, &(out->*member));
          }};
}

template <class S>
Field<S> BoolKey(const char* name, bool S::*member) {
  return {name, ConfigKeyKind::kBool, 0, 0, [member](const std::string& path, const YAML::Node& n, S* out) {
            std::string s;
            if (Status st = ReadScalar(n, path, &s); !st.ok()) return st;
            if (s != "true" && s != "false") return Bad(path, fmt::format("'{}' is not true or false", s));
            out->*member = s == "true";
            return Status::Ok();
          }};
}

template <class S, class I>
Field<S> IntegerKey(const char* name, I S::*member, int64_t lo, int64_t hi) {
  if (lo > hi || lo < std::numeric_limits<I>::min() || hi > std::numeric_limits<I>::max()) std::abort();
  return {name, ConfigKeyKind::kInteger, lo, hi,
          [member, lo, hi](const std::string& path, const YAML::Node& n, S* out) {
            std::string s;
            int64_t v = 0;
            if (Status st = ReadScalar(n, path, &s); !st.ok()) return st;
            if (Status st = ReadInteger(s, path, lo, hi, &v); !st.ok()) return st;
            out->*member = static_cast<I>(v);
            return Status::Ok();
          }};
}

template <class S>
Field<S> DurationKey(const char* name, int64_t S::*member, int64_t lo_ms, int64_t hi_ms) {
  return {name, ConfigKeyKind::kDuration, lo_ms, hi_ms,
          [member, lo_ms, hi_ms](const std::string& path, const YAML::Node& n, S* out) {
            std::string s;
            int64_t ms = 0;
            if (Status st = ReadScalar(n, path, &s); !st.ok()) return st;
            const NumberError e = ParseDuration(s, &ms);
            if (e == NumberError::kSyntax) {
              return Bad(path, fmt::format("'{}' is not a duration like 500ms, 30s, 15m, 1h or 7d", s));
            }
            if (e == NumberError::kOverflow || ms < lo_ms || ms > hi_ms) {
              return Bad(path, fmt::format("{} is out of range [{}, {}]", s, DurationText(lo_ms),
                                           DurationText(hi_ms)));
            }
            out->*member = ms;
            return Status::Ok();
          }};
}

template <class S>
Field<S> IntegerListKey(const char* name, std::vector<int32_t> S::*member, int32_t lo, int32_t hi) {
  return {name, ConfigKeyKind::kIntegerList, lo, hi,
          [member, lo, hi](const std::string& path, const YAML::Node& n, S* out) {
            std::vector<std::string> items;
            if (Status st = ReadList(n, path, &items); !st.ok()) return st;
            std::vector<int32_t> values;
            for (const std::string& item : items) {
              int64_t v = 0;
              if (Status st = ReadInteger(item, path, lo, hi, &v); !st.ok()) return st;
              values.push_back(static_cast<int32_t>(v));
            }
            out->*member = std::move(values);
            return Status::Ok();
          }};
}

template <class S>
Field<S> StringListKey(const char* name, std::vector<std::string> S::*member) {
  return {name, ConfigKeyKind::kStringList, 0, 0,
          [member](const std::string& path, const YAML::Node& n, S* out) {
            return ReadList(n, path, &(out->*member));
          }};
}

template <class S>
Field<S> StringMapKey(const char* name, std::map<std::string, std::string> S::*member) {
  return {name, ConfigKeyKind::kStringMap, 0, 0,
          [member](const std::string& path, const YAML::Node& n, S* out) {
            if (!n.IsMap()) return Bad(path, "expected a map of strings");
            for (const auto& kv : n) {
              const std::string key = kv.first.as<std::string>();
              if (Status st = ReadScalar(kv.second, path + "." + key, &(out->*member)[key]); !st.ok())
                return st;
            }
            return Status::Ok();
          }};
}

template <class S, class E>
Field<S> EnumKey(const char* name, E S::*member, std::vector<std::pair<std::string, E>> names) {
  return {name, ConfigKeyKind::kEnum, 0, 0,
          [member, names](const std::string& path, const YAML::Node& n, S* out) {
            std::string s;
            if (Status st = ReadScalar(n, path, &s); !st.ok()) return st;
            std::string all;
            for (const auto& [text, value] : names) {
              if (s == text) {
                out->*member = value;
                return Status::Ok();
              }
              all += (all.empty() ? "" : ", ") + text;
            }
            return Bad(path, fmt::format("'{}' is not one of {}", s, all));
          }};
}

template <class S>
Field<S> RemovedKey(const char* name, const char* why) {
  return {name, ConfigKeyKind::kRemoved, 0, 0,
          [why](const std::string& path, const YAML::Node&, S*) { return Bad(path, why); }};
}

std::string EnvNameFor(std::string_view path) {
  std::string name = "BELFRY_";
  for (char c : path)
    name.push_back(c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  return name;
}

std::string PathOf(const std::string& section, const char* name) {
  return section.empty() ? name : section + "." + name;
}

// A config struct, its YAML key ("" for the top-level keys of Config) and its fields.
struct Section {
  std::string name;
  // Applies the section's YAML map (undefined when absent), then each key's environment variable.
  std::function<Status(const YAML::Node& node, const EnvLookup& env, Config* c)> parse;
  std::vector<ConfigKey> keys;
};

template <class S>
Status ParseFields(const YAML::Node& node, const std::string& section, const std::vector<Field<S>>& fields,
                   const EnvLookup& env, S* out) {
  for (const Field<S>& f : fields) {
    const std::string path = PathOf(section, f.name);
    if (node.IsDefined() && node.IsMap()) {
      if (const YAML::Node v = node[f.name]; v.IsDefined() && !v.IsNull()) {  // null = default
        if (Status st = f.set(path, v, out); !st.ok()) return st;
      }
    }
    if (f.kind == ConfigKeyKind::kStringMap) continue;
    const std::string var = EnvNameFor(path);
    if (std::optional<std::string> v = env(var)) {
      if (Status st = f.set(path, YAML::Node(*v), out); !st.ok()) {
        return Status::Invalid("config", fmt::format("environment {}: {}", var, st.message()));
      }
    }
  }
  return Status::Ok();
}

// REQUIRES: `pick` returns the struct S inside a Config.
template <class S>
Section MakeSection(std::string name, S* (*pick)(Config*), std::vector<Field<S>> fields) {
  std::vector<ConfigKey> keys;
  for (const Field<S>& f : fields) {
    const std::string path = PathOf(name, f.name);
    keys.push_back({path, f.kind == ConfigKeyKind::kStringMap ? "" : EnvNameFor(path), f.kind, f.min, f.max});
  }
  auto parse = [name, pick, fields = std::move(fields)](const YAML::Node& node, const EnvLookup& env,
                                                        Config* c) {
    return ParseFields(node, name, fields, env, pick(c));
  };
  return {std::move(name), std::move(parse), std::move(keys)};
}

// Every key, with its range: one table per struct of belfry/config.h.
const std::vector<Section>& Sections() {
  static const auto* sections = new std::vector<Section>{
      MakeSection<Config>("", [](Config* c) { return c; },
                          {
                              StringKey("database_url", &Config::database_url),
                              StringKey("node_id", &Config::node_id),
                              StringKey("migrations_dir", &Config::migrations_dir),
                          }),
      MakeSection<KafkaConfig>(
          "kafka", [](Config* c) { return &c->kafka; },
          {
              StringKey("brokers", &KafkaConfig::brokers),
              StringKey("commands_topic", &KafkaConfig::commands_topic),
              StringKey("dlq_topic", &KafkaConfig::dlq_topic),
              StringKey("results_topic", &KafkaConfig::results_topic),
              StringKey("changes_topic", &KafkaConfig::changes_topic),
              StringKey("executions_topic", &KafkaConfig::executions_topic),
              StringKey("executions_dlq_topic", &KafkaConfig::executions_dlq_topic),
              StringKey("triggers_dlq_topic", &KafkaConfig::triggers_dlq_topic),
              StringKey("executions_group_id", &KafkaConfig::executions_group_id),
              StringKey("group_id", &KafkaConfig::group_id),
              IntegerKey("command_batch_max", &KafkaConfig::command_batch_max, 1, 100'000),
              DurationKey("command_batch_wait", &KafkaConfig::command_batch_wait_ms, 0, 10 * kSecond),
              StringMapKey("properties", &KafkaConfig::properties),
          }),
      MakeSection<SchedulerConfig>(
          "scheduler", [](Config* c) { return &c->scheduler; },
          {
              BoolKey("enabled", &SchedulerConfig::enabled),
              // shard_count x tick must be 60s (ValidateConfig), so tick is 10ms..60s.
              IntegerKey("shard_count", &SchedulerConfig::shard_count, 1, 6000),
              DurationKey("tick", &SchedulerConfig::tick_ms, 10, kMinute),
              IntegerListKey("intervals", &SchedulerConfig::intervals, 1, kMinutesPerDay),
              EnumKey("misfire_policy", &SchedulerConfig::misfire_policy,
                      {{"fire_all", MisfirePolicy::kFireAll},
                       {"coalesce", MisfirePolicy::kCoalesce},
                       {"skip", MisfirePolicy::kSkip}}),
              DurationKey("max_catchup", &SchedulerConfig::max_catchup_ms, 0, 7 * kDay),
              DurationKey("misfire_threshold", &SchedulerConfig::misfire_threshold_ms, 0, kDay),
              DurationKey("claim_lease", &SchedulerConfig::claim_lease_ms, 500, 10 * kMinute),
              DurationKey("claim_lock_timeout", &SchedulerConfig::claim_lock_timeout_ms, 0, kMinute),
              IntegerKey("workers", &SchedulerConfig::workers, 1, 64),
              IntegerKey("firings_in_flight", &SchedulerConfig::firings_in_flight, 1, 64),
              IntegerKey("catch_up_rate", &SchedulerConfig::catch_up_rate, 0, 100'000'000),
              DurationKey("catch_up_yield_at", &SchedulerConfig::catch_up_yield_at_ms, 0, kHour),
              IntegerKey("catch_up_chunk_minutes", &SchedulerConfig::catch_up_chunk_minutes, 1, 60),
              DurationKey("topic_unavailable_after", &SchedulerConfig::topic_unavailable_after_ms, 10'000,
                          kDay),
              DurationKey("one_shot_retention", &SchedulerConfig::one_shot_retention_ms, kMinute,
                          3660 * kDay),
          }),
      MakeSection<CommandsConfig>(
          "commands", [](Config* c) { return &c->commands; },
          {
              IntegerKey("max_details_bytes", &CommandsConfig::max_details_bytes, 2, 900 * 1024),
              StringListKey("allowed_topics", &CommandsConfig::allowed_topics),
              IntegerKey("bulk_step_jobs", &CommandsConfig::bulk_step_jobs, 1, 100'000),
              DurationKey("bulk_step_pause", &CommandsConfig::bulk_step_pause_ms, 0, kMinute),
              DurationKey("audit_retention", &CommandsConfig::audit_retention_ms, kHour, 3660 * kDay),
          }),
      MakeSection<ExecutionsConfig>(
          "executions", [](Config* c) { return &c->executions; },
          {
              BoolKey("enabled", &ExecutionsConfig::enabled),
              RemovedKey<ExecutionsConfig>(
                  "keep_per_job",
                  "removed: history is now kept by time, in daily partitions; set executions.retention "
                  "(a duration, default 7d) instead (docs/executions.md, \"History\")"),
              // Whole days are dropped at a time.
              DurationKey("retention", &ExecutionsConfig::retention_ms, kDay, 3660 * kDay),
              DurationKey("trim_interval", &ExecutionsConfig::trim_interval_ms, kSecond, kDay),
              IntegerKey("batch_max", &ExecutionsConfig::batch_max, 1, 100'000),
              IntegerKey("max_error_bytes", &ExecutionsConfig::max_error_bytes, 16, 65'536),
          }),
      MakeSection<AdminConfig>(
          "admin", [](Config* c) { return &c->admin; },
          {
              StringKey("listen", &AdminConfig::listen),
              StringKey("token", &AdminConfig::token),
              StringKey("write_token_secret", &AdminConfig::write_token_secret),
              DurationKey("command_wait", &AdminConfig::command_wait_ms, 0, kMinute),
              StringKey("console_dir", &AdminConfig::console_dir),
              IntegerKey("load_max_groups", &AdminConfig::load_max_groups, 1000, 100'000'000),
              IntegerKey("db_sessions", &AdminConfig::db_sessions, 1, 256),
              DurationKey("read_wait", &AdminConfig::read_wait_ms, 1, kMinute),
              DurationKey("statement_timeout", &AdminConfig::statement_timeout_ms, 10, 10 * kMinute),
              IntegerKey("worker_threads", &AdminConfig::worker_threads, 1, 4096),
              IntegerKey("max_queued_connections", &AdminConfig::max_queued_connections, 0, 65'536),
              DurationKey("request_head_timeout", &AdminConfig::request_head_timeout_ms, 100, 10 * kMinute),
              IntegerKey("max_connections", &AdminConfig::max_connections, 1, 65'536),
              IntegerKey("max_connections_per_client", &AdminConfig::max_connections_per_client, 1, 65'536),
          }),
      MakeSection<StandbyConfig>(
          "standby", [](Config* c) { return &c->standby; },
          {
              StringKey("url", &StandbyConfig::url),
              DurationKey("max_wait", &StandbyConfig::max_wait_ms, 0, 10 * kSecond),
              DurationKey("retry_after", &StandbyConfig::retry_after_ms, 0, 10 * kMinute),
              BoolKey("admin_reads", &StandbyConfig::admin_reads),
          }),
      MakeSection<CitusConfig>(
          "citus", [](Config* c) { return &c->citus; },
          {
              BoolKey("tick_on_workers", &CitusConfig::tick_on_workers),
              DurationKey("worker_retry_after", &CitusConfig::worker_retry_after_ms, 0, 10 * kMinute),
              DurationKey("worker_map_refresh", &CitusConfig::worker_map_refresh_ms, kSecond, 24 * 60 * kMinute),
          }),
      MakeSection<LogConfig>("log", [](Config* c) { return &c->log; },
                             {
                                 StringKey("level", &LogConfig::level),
                                 StringKey("format", &LogConfig::format),
                             }),
  };
  return *sections;
}

// Rejects a key of `node` that is neither a key of `section` nor (at the top level) a section.
Status RejectUnknownKeys(const YAML::Node& node, const Section& section) {
  for (const auto& kv : node) {
    const std::string name = kv.first.as<std::string>();
    const std::string path = PathOf(section.name, name.c_str());
    bool known = false;
    for (const ConfigKey& k : section.keys) known = known || k.path == path;
    if (section.name.empty()) {
      for (const Section& s : Sections()) known = known || (!s.name.empty() && s.name == name);
    }
    if (!known) return Bad(path, "unknown key");
  }
  return Status::Ok();
}

}  // namespace

std::optional<int64_t> ParseDurationMs(std::string_view text) {
  int64_t ms = 0;
  if (ParseDuration(text, &ms) != NumberError::kNone) return std::nullopt;
  return ms;
}

const std::vector<ConfigKey>& ConfigKeys() {
  static const auto* keys = [] {
    auto* all = new std::vector<ConfigKey>;
    for (const Section& s : Sections()) all->insert(all->end(), s.keys.begin(), s.keys.end());
    return all;
  }();
  return *keys;
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
  if (s.shard_count * s.tick_ms != kMsPerMinute) {
    return Bad("scheduler.tick", fmt::format("shard_count ({}) x tick ({}ms) must equal 60s, got {}ms",
                                             s.shard_count, s.tick_ms, s.shard_count * s.tick_ms));
  }
  if (s.intervals.empty()) return Bad("scheduler.intervals", "must not be empty");
  std::set<int32_t> seen;
  for (int32_t i : s.intervals) {
    if (i <= 0 || kMinutesPerDay % i != 0) {
      return Bad("scheduler.intervals", fmt::format("{} does not divide 1440 (a UTC day in minutes)", i));
    }
    if (!seen.insert(i).second) return Bad("scheduler.intervals", fmt::format("{} is listed twice", i));
  }
  if (s.max_catchup_ms < s.misfire_threshold_ms) {
    return Bad("scheduler.max_catchup", "must be at least scheduler.misfire_threshold");
  }
  if (s.one_shot_retention_ms < s.max_catchup_ms + kMsPerMinute) {
    return Bad("scheduler.one_shot_retention", "must be at least scheduler.max_catchup plus one minute");
  }
  if (c.log.format != "text" && c.log.format != "json") return Bad("log.format", "must be text or json");
  static const std::set<std::string> kLevels = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  if (!kLevels.count(c.log.level)) return Bad("log.level", "must be one of trace, debug, info, warn, error");
  if (c.database_url.empty()) return Bad("database_url", "must be set");
  if (c.kafka.brokers.empty()) return Bad("kafka.brokers", "must be set");
  if (c.standby.admin_reads && c.standby.url.empty()) return Bad("standby.admin_reads", "needs standby.url");
  if (!c.admin.write_token_secret.empty() && c.admin.write_token_secret.size() < 32) {
    return Bad("admin.write_token_secret", "must be at least 32 bytes (e.g. `openssl rand -base64 32`), or empty");
  }
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
  if (!root.IsMap()) return Bad("<root>", "expected a map");
  const YAML::Node& const_root = root;  // const: lookups never add keys
  Config c;
  try {
    for (const Section& section : Sections()) {
      const YAML::Node node = section.name.empty() ? const_root : const_root[section.name];
      if (node.IsDefined() && !node.IsMap()) return Bad(section.name, "expected a map");
      if (node.IsDefined()) {
        if (Status st = RejectUnknownKeys(node, section); !st.ok()) return st;
      }
      if (Status st = section.parse(node, env, &c); !st.ok()) return st;
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
