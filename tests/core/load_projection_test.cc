// The load projection against the rules one job at a time: IsDueAtSlot for interval jobs, the
// run minute for one-shots, CronFiresAt for calendar jobs, across a DST transition.
#include "core/load_projection.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <random>
#include <tuple>

#include "core/cron_expression.h"
#include "core/iso_time.h"
#include "core/slot_math.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {
namespace {

const std::vector<int32_t> kIntervals = {1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 180, 240, 360, 480, 720, 1440};

int64_t Minute(const char* iso) { return *ParseIsoTime(iso) / kMsPerMinute; }

struct TestJob {
  LoadGroup group;  // jobs = 1
  std::optional<CronExpression> cron;
  const TimeZone* zone = nullptr;
};

// The rule for one job at one minute, without the projection's indexes.
bool Fires(const TestJob& j, int64_t minute, int64_t tick_ms) {
  const LoadGroup& g = j.group;
  const EpochMs slot = SlotMs(minute, g.shard, tick_ms);
  switch (g.kind) {
    case LoadGroup::Kind::kInterval:
      return IsDueAtSlot(g.interval_minutes, g.offset_minutes, g.start_at, g.end_at, false, minute, slot);
    case LoadGroup::Kind::kOneShot:
      return g.run_minute == minute && (!g.start_at || *g.start_at <= slot) && (!g.end_at || *g.end_at > slot);
    case LoadGroup::Kind::kCalendar:
      return CronFiresAt(*j.cron, j.zone, minute) && (!g.start_at || *g.start_at <= slot) &&
             (!g.end_at || *g.end_at > slot);
  }
  return false;
}

class LoadProjectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* names[] = {"America/New_York", "Europe/Berlin", "Asia/Kathmandu"};
    for (int i = 0; i < 3; ++i) zones_.push_back({i + 1, *LocateTimeZone(SystemTimeZones(), names[i])});
  }

  TestJob RandomJob(std::mt19937_64& rng, int64_t first, int64_t last) {
    TestJob j;
    LoadGroup& g = j.group;
    g.jobs = 1;
    g.shard = static_cast<int32_t>(rng() % 120);
    g.label = "owner-" + std::to_string(rng() % 7);
    const int kind = static_cast<int>(rng() % 10);
    if (kind < 6) {
      g.kind = LoadGroup::Kind::kInterval;
      g.interval_minutes = kIntervals[rng() % kIntervals.size()];
      g.offset_minutes = static_cast<int32_t>(rng() % g.interval_minutes);
    } else if (kind < 8) {
      g.kind = LoadGroup::Kind::kOneShot;
      g.run_minute = first - 2 + static_cast<int64_t>(rng() % static_cast<uint64_t>(last - first + 5));
    } else {
      const char* crons[] = {"30 2 * * *", "*/15 * * * *", "0,30 1,2,3 * * *", "45 1 * * 0", "0 * * * *"};
      g.kind = LoadGroup::Kind::kCalendar;
      j.cron = *ParseCronExpression(crons[rng() % 5]);
      const ZoneEntry& z = zones_[rng() % zones_.size()];
      j.zone = z.zone;
      const CalendarSlots slots = CalendarSlotsFor(*j.cron);
      for (int32_t code : slots.codes) {
        g.slots.push_back({z.id * kCronKeyStride + code, slots.hour_mask, slots.dom_mask, slots.month_mask,
                           slots.dow_mask, slots.day_or});
      }
    }
    // A quarter start or end inside the window (at any millisecond, so some land on a slot).
    if (rng() % 4 == 0) g.start_at = (first + static_cast<int64_t>(rng() % (last - first + 1))) * kMsPerMinute + static_cast<int64_t>(rng() % 60'000);
    if (rng() % 4 == 0) g.end_at = (first + static_cast<int64_t>(rng() % (last - first + 1))) * kMsPerMinute + static_cast<int64_t>(rng() % 60'000);
    return j;
  }

  std::vector<ZoneEntry> zones_;
};

// 3,000 random jobs over the 2026 spring-forward night in New York: every shard-minute's
// projected count equals the count of jobs whose own rule fires there.
TEST_F(LoadProjectionTest, AgreesWithEachJobsRuleInEveryShardMinute) {
  LoadWindow w;
  w.first_minute = Minute("2026-03-08T05:30:00Z");  // 00:30 in New York; 02:00 local is skipped
  w.last_minute = Minute("2026-03-08T09:29:00Z");
  w.intervals = kIntervals;
  std::mt19937_64 rng(20261126);
  std::vector<TestJob> jobs;
  std::vector<LoadGroup> groups;
  for (int i = 0; i < 3000; ++i) {
    jobs.push_back(RandomJob(rng, w.first_minute, w.last_minute));
    groups.push_back(jobs.back().group);
  }
  const LoadProjection p = ProjectLoad(w, groups, zones_);
  int64_t total = 0, calendar = 0;
  std::map<std::string, int64_t> labels;
  for (int64_t m = w.first_minute; m <= w.last_minute; ++m) {
    std::vector<int64_t> want(120, 0);
    for (const TestJob& j : jobs) {
      if (!Fires(j, m, w.tick_ms)) continue;
      ++want[static_cast<size_t>(j.group.shard)];
      labels[j.group.label]++;
      calendar += j.group.kind == LoadGroup::Kind::kCalendar;
    }
    for (int32_t s = 0; s < 120; ++s) {
      ASSERT_EQ(p.At(m, s), want[static_cast<size_t>(s)]) << "shard " << s << " at " << FormatIsoTime(m * kMsPerMinute);
      total += want[static_cast<size_t>(s)];
    }
  }
  EXPECT_EQ(p.total, total);
  EXPECT_GT(calendar, 100);  // the calendar jobs did fire, gap included
  ASSERT_EQ(p.by_label.size(), labels.size());
  for (const LoadLabelTotal& l : p.by_label) EXPECT_EQ(l.triggers, labels[l.label]) << l.label;
  EXPECT_TRUE(std::is_sorted(p.by_label.begin(), p.by_label.end(),
                             [](const LoadLabelTotal& a, const LoadLabelTotal& b) { return a.triggers > b.triggers; }));
}

// Groups carry counts: one group of n identical jobs projects as n single ones.
TEST_F(LoadProjectionTest, AGroupCountsAsItsJobs) {
  LoadWindow w;
  w.first_minute = Minute("2026-11-26T08:55:00Z");
  w.last_minute = Minute("2026-11-26T09:04:00Z");
  w.intervals = kIntervals;
  LoadGroup herd;  // a million jobs at 09:00 UTC
  herd.shard = 7;
  herd.interval_minutes = 1440;
  herd.offset_minutes = 9 * 60;
  herd.jobs = 1'000'000;
  LoadGroup every_minute;
  every_minute.shard = 8;
  every_minute.interval_minutes = 1;
  every_minute.jobs = 10;
  LoadGroup odd_interval = every_minute;  // an interval the tick does not ask for never fires
  odd_interval.interval_minutes = 7;
  const LoadProjection p = ProjectLoad(w, {herd, every_minute, odd_interval}, {});
  const int64_t nine = Minute("2026-11-26T09:00:00Z");
  EXPECT_EQ(p.At(nine, 7), 1'000'000);
  EXPECT_EQ(p.At(nine - 1, 7), 0);
  EXPECT_EQ(p.At(nine, 8), 10);
  EXPECT_EQ(p.total, 1'000'000 + 10 * 10);
  EXPECT_EQ(p.MinuteTotal(nine), 1'000'010);
  // Shard 7's slot is at 3.5 s, shard 8's at 4.0 s.
  const std::vector<int64_t> seconds = p.Seconds(nine);
  EXPECT_EQ(seconds[3], 1'000'000);
  EXPECT_EQ(seconds[4], 10);

  const nlohmann::json j = nlohmann::json::parse(EncodeLoadProjectionJson(p, "", true, 10));
  EXPECT_EQ(j["from"], "2026-11-26T08:55:00.000Z");
  EXPECT_EQ(j["to"], "2026-11-26T09:05:00.000Z");
  ASSERT_EQ(j["minutes"].size(), 10u);
  EXPECT_EQ(j["minutes"][5]["at"], "2026-11-26T09:00:00.000Z");
  EXPECT_EQ(j["minutes"][5]["triggers"], 1'000'010);
  EXPECT_EQ(j["minutes"][5]["busiestShard"]["shard"], 7);
  EXPECT_EQ(j["minutes"][5]["busiestSecond"]["second"], 3);
  EXPECT_EQ(j["minutes"][5]["shards"].size(), 120u);
  EXPECT_EQ(j["peak"]["minute"]["at"], "2026-11-26T09:00:00.000Z");
  EXPECT_EQ(j["peak"]["second"]["at"], "2026-11-26T09:00:03.000Z");
  EXPECT_EQ(j["peak"]["second"]["triggers"], 1'000'000);
  EXPECT_EQ(j["total"], 1'000'100);
  EXPECT_FALSE(j.contains("by"));
}

TEST(LoadBreakdownTest, OwnerTopicOrALabelKeyByTheLabelRules) {
  EXPECT_EQ(ParseLoadBreakdown("")->kind, LoadBreakdown::Kind::kNone);
  EXPECT_EQ(ParseLoadBreakdown("owner")->kind, LoadBreakdown::Kind::kOwner);
  EXPECT_EQ(ParseLoadBreakdown("topic")->kind, LoadBreakdown::Kind::kTopic);
  StatusOr<LoadBreakdown> label = ParseLoadBreakdown("label:team.io/carrier");
  ASSERT_TRUE(label.ok()) << label.status().ToString();
  EXPECT_EQ(label->kind, LoadBreakdown::Kind::kLabel);
  EXPECT_EQ(label->label_key, "team.io/carrier");
  for (const char* bad : {"shard", "label:", "label:-x", "label:a b", "Owner", "label"}) {
    StatusOr<LoadBreakdown> r = ParseLoadBreakdown(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().reason(), "invalid_by") << bad;
  }
}

TEST_F(LoadProjectionTest, BreaksDownByLabelMostFirst) {
  LoadWindow w;
  w.first_minute = Minute("2026-11-26T09:00:00Z");
  w.last_minute = w.first_minute + 59;
  w.intervals = kIntervals;
  std::vector<LoadGroup> groups;
  for (const auto& [owner, interval] : std::vector<std::pair<std::string, int32_t>>{{"a", 1}, {"b", 5}, {"c", 60}}) {
    LoadGroup g;
    g.shard = 1;
    g.interval_minutes = interval;
    g.label = owner;
    g.jobs = 2;
    groups.push_back(g);
  }
  const LoadProjection p = ProjectLoad(w, groups, {});
  const nlohmann::json j = nlohmann::json::parse(EncodeLoadProjectionJson(p, "owner", false, 2));
  EXPECT_EQ(j["by"], "owner");
  EXPECT_EQ(j["labels"], 3);
  ASSERT_EQ(j["top"].size(), 2u);
  EXPECT_EQ(j["top"][0]["owner"], "a");
  EXPECT_EQ(j["top"][0]["triggers"], 120);
  EXPECT_EQ(j["top"][1]["owner"], "b");
  EXPECT_EQ(j["top"][1]["triggers"], 24);
  EXPECT_FALSE(j["minutes"][0].contains("shards"));
}

}  // namespace
}  // namespace belfry
