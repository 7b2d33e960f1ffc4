#include "http/metrics_registry.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace belfry {

// A small parser for the Prometheus text format 0.0.4: every non-comment line is
// `name{label="value",...} value [timestamp]`, every sample belongs to a family announced by
// "# HELP" and "# TYPE" before it, and a histogram's +Inf bucket equals its _count. Samples are
// stored under `name{a="x",b="y"}` with labels sorted by name (or just `name`). Returns "" when the
// text is valid, else what is wrong. Shared with admin_server_test.cc.
std::string ParseExposition(const std::string& text, std::map<std::string, double>* samples) {
  std::map<std::string, std::string> help, type;
  std::set<std::string> families_with_samples;
  auto valid_name = [](const std::string& n, bool colon) {
    if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
    for (char c : n) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (colon && c == ':'))) return false;
    }
    return true;
  };
  auto parse_value = [](const std::string& v, double* out) {
    if (v == "+Inf") return *out = INFINITY, true;
    if (v == "-Inf") return *out = -INFINITY, true;
    if (v == "NaN") return *out = NAN, true;
    char* end = nullptr;
    *out = std::strtod(v.c_str(), &end);
    return !v.empty() && end == v.c_str() + v.size();
  };
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    const std::string where = "line " + std::to_string(n) + " \"" + line + "\": ";
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream c(line);
      std::string hash, kw, name;
      c >> hash >> kw >> name;
      if (kw == "HELP" || kw == "TYPE") {
        if (!valid_name(name, true)) return where + "bad metric name";
        std::string rest;
        std::getline(c, rest);
        if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
        if (kw == "HELP") {
          if (help.count(name)) return where + "second HELP";
          help[name] = rest;
        } else {
          static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary", "untyped"};
          if (!kTypes.count(rest)) return where + "unknown type";
          if (type.count(name)) return where + "second TYPE";
          if (families_with_samples.count(name)) return where + "TYPE after samples";
          type[name] = rest;
        }
      }
      continue;
    }
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    const std::string name = line.substr(0, i);
    if (!valid_name(name, true)) return where + "bad sample name";
    std::map<std::string, std::string> labels;
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        size_t eq = line.find('=', i);
        if (eq == std::string::npos) return where + "label without '='";
        const std::string lname = line.substr(i, eq - i);
        if (!valid_name(lname, false)) return where + "bad label name";
        i = eq + 1;
        if (i >= line.size() || line[i] != '"') return where + "label value not quoted";
        ++i;
        std::string value;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\') {
            if (i + 1 >= line.size()) return where + "dangling escape";
            const char e = line[i + 1];
            if (e == 'n') {
              value.push_back('\n');
            } else if (e == '\\' || e == '"') {
              value.push_back(e);
            } else {
              return where + "bad escape";
            }
            i += 2;
          } else {
            value.push_back(line[i++]);
          }
        }
        if (i >= line.size()) return where + "unterminated label value";
        ++i;
        if (labels.count(lname)) return where + "duplicate label";
        labels[lname] = value;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) return where + "unterminated label set";
      ++i;
    }
    if (i >= line.size() || line[i] != ' ') return where + "no space before the value";
    std::istringstream rest(line.substr(i + 1));
    std::string value_text, ts, extra;
    rest >> value_text >> ts >> extra;
    double value = 0;
    if (!parse_value(value_text, &value)) return where + "bad value";
    if (!ts.empty()) {
      char* end = nullptr;
      std::strtoll(ts.c_str(), &end, 10);
      if (end != ts.c_str() + ts.size()) return where + "bad timestamp";
    }
    if (!extra.empty()) return where + "trailing text";

    std::string family = name;
    if (!type.count(family)) {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        const std::string s = suffix;
        if (name.size() > s.size() && name.ends_with(s)) {
          const std::string base = name.substr(0, name.size() - s.size());
          if (type.count(base) && (type[base] == "histogram" || type[base] == "summary")) family = base;
        }
      }
    }
    if (!type.count(family)) return where + "sample without a TYPE line before it";
    if (!help.count(family)) return where + "sample without a HELP line";
    if (type[family] == "histogram" && name.ends_with("_bucket") && !labels.count("le")) {
      return where + "histogram bucket without le";
    }
    families_with_samples.insert(family);

    std::string key = name;
    if (!labels.empty()) {
      key += "{";
      bool first = true;
      for (const auto& [k, v] : labels) {
        key += (first ? "" : ",") + k + "=\"" + v + "\"";
        first = false;
      }
      key += "}";
    }
    if (samples->count(key)) return where + "duplicate sample";
    (*samples)[key] = value;
  }
  for (const auto& [name, t] : type) {
    if (!help.count(name)) return "family " + name + " has TYPE but no HELP";
    if (t != "histogram") continue;
    // Unlabelled histograms only (all of ours): +Inf bucket == _count.
    auto inf = samples->find(name + "_bucket{le=\"+Inf\"}");
    auto count = samples->find(name + "_count");
    if (inf != samples->end() && count != samples->end() && inf->second != count->second) {
      return "histogram " + name + ": +Inf bucket != _count";
    }
  }
  return "";
}

namespace {

std::map<std::string, double> Scrape(MetricsRegistry& m) {
  std::map<std::string, double> samples;
  const std::string text = m.Serialize();
  const std::string err = ParseExposition(text, &samples);
  EXPECT_EQ(err, "") << text;
  return samples;
}

double At(const std::map<std::string, double>& s, const std::string& key) {
  auto it = s.find(key);
  EXPECT_NE(it, s.end()) << "missing sample " << key;
  return it == s.end() ? NAN : it->second;
}

TEST(ExpositionParserTest, AcceptsValidTextAndRejectsBrokenText) {
  std::map<std::string, double> s;
  EXPECT_EQ(ParseExposition("# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"q\\\"\"} 1\n", &s), "");
  EXPECT_EQ(s.at("a_total{x=\"q\"\"}"), 1);
  s.clear();
  EXPECT_NE(ParseExposition("a_total 1\n", &s), "");  // no TYPE/HELP
  s.clear();
  EXPECT_NE(ParseExposition("# TYPE a gauge\na 1\n", &s), "");  // no HELP
  s.clear();
  EXPECT_NE(ParseExposition("# HELP a A.\n# TYPE a gauge\na one\n", &s), "");
  s.clear();
  EXPECT_NE(ParseExposition("# HELP a A.\n# TYPE a gauge\na{b=1} 1\n", &s), "");
}

TEST(MetricsRegistryTest, ExposesEveryFamilyWithHelpAndType) {
  MetricsRegistry m("1.2.3");
  const std::string text = m.Serialize();
  std::map<std::string, double> s;
  ASSERT_EQ(ParseExposition(text, &s), "") << text;
  const std::map<std::string, std::string> expected = {
      {"belfry_triggers_emitted_total", "counter"},
      {"belfry_triggers_refused_total", "counter"},
      {"belfry_triggers_resent_total", "counter"},
      {"belfry_trigger_requeries_total", "counter"},
      {"belfry_shard_minutes_fired_total", "counter"},
      {"belfry_shard_minutes_caught_up_total", "counter"},
      {"belfry_shard_minutes_skipped_total", "counter"},
      {"belfry_firing_failures_total", "counter"},
      {"belfry_tick_duration_seconds", "histogram"},
      {"belfry_tick_query_seconds", "histogram"},
      {"belfry_tick_query_rows", "histogram"},
      {"belfry_trigger_lateness_seconds", "histogram"},
      {"belfry_commands_total", "counter"},
      {"belfry_command_batches_total", "counter"},
      {"belfry_command_apply_seconds", "histogram"},
      {"belfry_consumer_lag", "gauge"},
      {"belfry_producer_queue_messages", "gauge"},
      {"belfry_build_info", "gauge"},
      {"belfry_up", "gauge"},
  };
  for (const auto& [name, type] : expected) {
    EXPECT_NE(text.find("# HELP " + name + " "), std::string::npos) << name;
    EXPECT_NE(text.find("# TYPE " + name + " " + type + "\n"), std::string::npos) << name;
  }
  EXPECT_EQ(At(s, "belfry_build_info{version=\"1.2.3\"}"), 1);
  EXPECT_EQ(At(s, "belfry_up"), 1);
  EXPECT_EQ(At(s, "belfry_triggers_emitted_total"), 0);
  EXPECT_EQ(At(s, "belfry_triggers_refused_total{reason=\"topic_policy\"}"), 0);
  for (const char* kind : {"on_time", "catch_up", "coalesced"}) {
    EXPECT_EQ(At(s, std::string("belfry_shard_minutes_fired_total{kind=\"") + kind + "\"}"), 0);
  }
  EXPECT_EQ(At(s, "belfry_shard_minutes_skipped_total{reason=\"policy\"}"), 0);
  EXPECT_EQ(At(s, "belfry_shard_minutes_skipped_total{reason=\"too_old\"}"), 0);
  for (const char* op : {"upsert", "delete", "pause", "resume"}) {
    EXPECT_EQ(At(s, std::string("belfry_commands_total{op=\"") + op + "\",status=\"applied\"}"), 0);
  }
  EXPECT_TRUE(std::isnan(At(s, "belfry_consumer_lag")));  // unknown until sampled
  // Lateness buckets run from 5 ms to 60 s.
  EXPECT_EQ(At(s, "belfry_trigger_lateness_seconds_bucket{le=\"0.005\"}"), 0);
  EXPECT_EQ(At(s, "belfry_trigger_lateness_seconds_bucket{le=\"60\"}"), 0);
  EXPECT_EQ(At(s, "belfry_tick_query_rows_bucket{le=\"1000000\"}"), 0);
}

TEST(MetricsRegistryTest, OnFiredMovesCountersAndHistograms) {
  MetricsRegistry m("t");
  ShardMinuteReport r;
  r.shard = 3;
  r.first_minute = r.last_minute = 100;
  r.triggers = 5;
  r.refused = 2;
  r.query_ms = 20;
  r.total_ms = 150;
  r.lateness_ms = 120;
  m.OnFired(r);
  ShardMinuteReport late = r;
  late.on_time = false;
  late.triggers = 1;
  late.refused = 0;
  late.lateness_ms = 90'000;  // beyond the last bucket
  m.OnFired(late);
  ShardMinuteReport coalesced = r;
  coalesced.on_time = false;
  coalesced.coalesced = true;
  coalesced.first_minute = 90;
  coalesced.last_minute = 99;
  coalesced.triggers = 0;
  coalesced.refused = 0;
  m.OnFired(coalesced);

  const auto s = Scrape(m);
  EXPECT_EQ(At(s, "belfry_triggers_emitted_total"), 6);
  EXPECT_EQ(At(s, "belfry_shard_minutes_fired_total{kind=\"on_time\"}"), 1);
  EXPECT_EQ(At(s, "belfry_shard_minutes_fired_total{kind=\"catch_up\"}"), 1);
  EXPECT_EQ(At(s, "belfry_shard_minutes_fired_total{kind=\"coalesced\"}"), 10);  // minutes 90..99
  EXPECT_EQ(At(s, "belfry_tick_duration_seconds_count"), 3);
  EXPECT_DOUBLE_EQ(At(s, "belfry_tick_duration_seconds_sum"), 0.45);
  EXPECT_EQ(At(s, "belfry_tick_query_seconds_count"), 3);
  EXPECT_EQ(At(s, "belfry_tick_query_seconds_bucket{le=\"0.025\"}"), 3);
  EXPECT_EQ(At(s, "belfry_tick_query_rows_count"), 3);
  EXPECT_EQ(At(s, "belfry_tick_query_rows_sum"), 8);  // 5+2, 1, 0
  EXPECT_EQ(At(s, "belfry_tick_query_rows_bucket{le=\"0\"}"), 1);
  EXPECT_EQ(At(s, "belfry_tick_query_rows_bucket{le=\"1\"}"), 2);
  EXPECT_EQ(At(s, "belfry_tick_query_rows_bucket{le=\"10\"}"), 3);
  // Lateness is weighted by triggers: 5 at 0.12 s, 1 at 90 s; the empty coalesced query adds none.
  EXPECT_EQ(At(s, "belfry_trigger_lateness_seconds_count"), 6);
  EXPECT_NEAR(At(s, "belfry_trigger_lateness_seconds_sum"), 5 * 0.12 + 90, 1e-9);
  EXPECT_EQ(At(s, "belfry_trigger_lateness_seconds_bucket{le=\"0.1\"}"), 0);
  EXPECT_EQ(At(s, "belfry_trigger_lateness_seconds_bucket{le=\"0.25\"}"), 5);
  EXPECT_EQ(At(s, "belfry_trigger_lateness_seconds_bucket{le=\"60\"}"), 5);
  EXPECT_EQ(At(s, "belfry_trigger_lateness_seconds_bucket{le=\"+Inf\"}"), 6);
}

TEST(MetricsRegistryTest, LatenessOnABucketBoundaryCountsInThatBucket) {
  MetricsRegistry m("t");
  ShardMinuteReport r;
  r.triggers = 2;
  r.lateness_ms = 5;  // exactly 0.005 s: "le" is inclusive
  m.OnFired(r);
  r.lateness_ms = -3;  // an ack before the slot (clock skew) counts as on time
  m.OnFired(r);
  const auto s = Scrape(m);
  EXPECT_EQ(At(s, "belfry_trigger_lateness_seconds_bucket{le=\"0.005\"}"), 4);
  EXPECT_EQ(At(s, "belfry_trigger_lateness_seconds_count"), 4);
}

TEST(MetricsRegistryTest, MissesFailuresAndRefusals) {
  MetricsRegistry m("t");
  m.OnMissed(4, 0, 0);
  m.OnMissed(0, 3, 2);
  m.OnFiringFailed(7, Status::Retryable("db down"));
  m.OnFiringFailed(8, Status::FailedPrecondition("claim lost"));
  m.OnRefusedTopic("__consumer_offsets");
  const auto s = Scrape(m);
  EXPECT_EQ(At(s, "belfry_shard_minutes_caught_up_total"), 4);
  EXPECT_EQ(At(s, "belfry_shard_minutes_skipped_total{reason=\"policy\"}"), 3);
  EXPECT_EQ(At(s, "belfry_shard_minutes_skipped_total{reason=\"too_old\"}"), 2);
  EXPECT_EQ(At(s, "belfry_firing_failures_total"), 2);
  EXPECT_EQ(At(s, "belfry_triggers_refused_total{reason=\"topic_policy\"}"), 1);
}

TEST(MetricsRegistryTest, UnackedResendsAndRequeries) {
  MetricsRegistry m("t");
  EXPECT_EQ(At(Scrape(m), "belfry_trigger_requeries_total{reason=\"over_bound\"}"), 0);
  m.OnUnackedResent(2);
  m.OnUnackedResent(3);
  m.OnUnackedRequery("untracked");
  const auto s = Scrape(m);
  EXPECT_EQ(At(s, "belfry_triggers_resent_total"), 5);
  EXPECT_EQ(At(s, "belfry_trigger_requeries_total{reason=\"untracked\"}"), 1);
  EXPECT_EQ(At(s, "belfry_trigger_requeries_total{reason=\"claim_lost\"}"), 0);
}

TEST(MetricsRegistryTest, CommandBatchesByOpAndReason) {
  MetricsRegistry m("t");
  m.OnCommandBatch({{"upsert", 10}, {"delete", 2}}, {{"invalid_json", 1}, {"forbidden_topic", 3}}, 40);
  m.OnCommandBatch({{"upsert", 1}}, {}, 2500);
  m.OnCommandBatch({}, {{"invalid_json", 2}}, 0);  // nothing applied: no apply latency
  const auto s = Scrape(m);
  EXPECT_EQ(At(s, "belfry_commands_total{op=\"upsert\",status=\"applied\"}"), 11);
  EXPECT_EQ(At(s, "belfry_commands_total{op=\"delete\",status=\"applied\"}"), 2);
  EXPECT_EQ(At(s, "belfry_commands_total{op=\"pause\",status=\"applied\"}"), 0);
  EXPECT_EQ(At(s, "belfry_commands_total{reason=\"invalid_json\",status=\"rejected\"}"), 3);
  EXPECT_EQ(At(s, "belfry_commands_total{reason=\"forbidden_topic\",status=\"rejected\"}"), 3);
  EXPECT_EQ(At(s, "belfry_command_batches_total"), 3);
  EXPECT_EQ(At(s, "belfry_command_apply_seconds_count"), 2);
  EXPECT_DOUBLE_EQ(At(s, "belfry_command_apply_seconds_sum"), 2.54);
  EXPECT_EQ(At(s, "belfry_command_apply_seconds_bucket{le=\"0.05\"}"), 1);
}

TEST(MetricsRegistryTest, ReasonLabelsAreCapped) {
  MetricsRegistry m("t");
  for (int i = 0; i < 200; ++i) m.OnCommandBatch({}, {{"reason_" + std::to_string(i), 1}}, 0);
  const auto s = Scrape(m);
  int reasons = 0;
  for (const auto& [key, v] : s) reasons += key.find("status=\"rejected\"") != std::string::npos;
  EXPECT_LE(reasons, 65);
  EXPECT_EQ(At(s, "belfry_commands_total{reason=\"reason_0\",status=\"rejected\"}"), 1);
  EXPECT_EQ(At(s, "belfry_commands_total{reason=\"other\",status=\"rejected\"}"), 200 - 64);
}

TEST(MetricsRegistryTest, SamplerRunsBeforeEachScrape) {
  MetricsRegistry m("t");
  int calls = 0;
  m.SetSampler([&](MetricsRegistry& r) {
    ++calls;
    r.SetConsumerLag(40 + calls);
    r.SetProducerQueue(7 * calls);
  });
  auto s = Scrape(m);
  EXPECT_EQ(At(s, "belfry_consumer_lag"), 41);
  EXPECT_EQ(At(s, "belfry_producer_queue_messages"), 7);
  s = Scrape(m);
  EXPECT_EQ(At(s, "belfry_consumer_lag"), 42);
  EXPECT_EQ(At(s, "belfry_producer_queue_messages"), 14);
  m.SetSampler([](MetricsRegistry& r) { r.SetConsumerLag(-1); });
  s = Scrape(m);
  EXPECT_TRUE(std::isnan(At(s, "belfry_consumer_lag")));
  m.SetSampler(nullptr);
  s = Scrape(m);
  EXPECT_EQ(calls, 2);
}

TEST(MetricsRegistryTest, ConcurrentUpdatesAndScrapesLoseNothing) {
  MetricsRegistry m("t");
  m.SetSampler([](MetricsRegistry& r) { r.SetProducerQueue(1); });
  constexpr int kThreads = 8;
  constexpr int kPerThread = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&m, t] {
      ShardMinuteReport r;
      r.triggers = 1;
      r.lateness_ms = 10;
      for (int i = 0; i < kPerThread; ++i) {
        m.OnFired(r);
        m.OnCommandBatch({{"upsert", 1}}, {{"reason_" + std::to_string(t), 1}}, 1);
        if (i % 500 == 0) m.Serialize();
      }
    });
  }
  for (auto& th : threads) th.join();
  const auto s = Scrape(m);
  EXPECT_EQ(At(s, "belfry_triggers_emitted_total"), kThreads * kPerThread);
  EXPECT_EQ(At(s, "belfry_trigger_lateness_seconds_count"), kThreads * kPerThread);
  EXPECT_EQ(At(s, "belfry_commands_total{op=\"upsert\",status=\"applied\"}"), kThreads * kPerThread);
  EXPECT_EQ(At(s, "belfry_command_batches_total"), kThreads * kPerThread);
}

}  // namespace
}  // namespace belfry
