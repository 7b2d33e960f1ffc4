#include "core/job_change.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace belfry {
namespace {

StoredJob Job(const std::string& id, bool paused, EpochMs updated_at) {
  StoredJob j;
  j.spec.id = id;
  j.spec.interval_minutes = 5;
  j.spec.topic = "tracking.poll";
  j.spec.shard = 7;
  j.paused = paused;
  j.created_at = 1795354620000LL;
  j.updated_at = updated_at;
  return j;
}

TEST(JobChangeBetweenTest, NothingIsRecordedWhenTheJobIsAsItWas) {
  EXPECT_FALSE(JobChangeBetween("a", "delete", std::nullopt, std::nullopt)) << "a delete of no job";
  EXPECT_FALSE(JobChangeBetween("a", "upsert", Job("a", false, 1), Job("a", false, 1))) << "a replay";
  EXPECT_FALSE(JobChangeBetween("a", "upsert", Job("a", false, 1), Job("a", false, 99)))
      << "a re-upsert of the same spec only moves updatedAt";
  EXPECT_FALSE(JobChangeBetween("a", "pause", Job("a", true, 1), Job("a", true, 2))) << "a pause of a paused job";
  StoredJob tricky = Job("a", false, 1);
  tricky.spec.details_json = R"({"x":1,"updatedAt":"2026"})";  // the field's name inside the details
  StoredJob later = tricky;
  later.updated_at = 2;
  EXPECT_FALSE(JobChangeBetween("a", "upsert", tricky, later));
  later.paused = true;
  EXPECT_TRUE(JobChangeBetween("a", "upsert", tricky, later));
}

TEST(JobChangeBetweenTest, ACreateAChangeAndADeleteAreRecorded) {
  std::optional<JobChange> c = JobChangeBetween("a", "upsert", std::nullopt, Job("a", false, 1));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->before_json, "");
  EXPECT_FALSE(c->after_json.empty());
  c = JobChangeBetween("a", "pause", Job("a", false, 1), Job("a", true, 2));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->op, "pause");
  EXPECT_FALSE(nlohmann::json::parse(c->before_json)["paused"].get<bool>());
  EXPECT_TRUE(nlohmann::json::parse(c->after_json)["paused"].get<bool>());
  c = JobChangeBetween("a", "delete", Job("a", false, 1), std::nullopt);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->after_json, "");
}

TEST(EncodeJobChangeJsonTest, TheEventCarriesEveryField) {
  JobChange c = *JobChangeBetween("job-1", "pause", Job("job-1", false, 1), Job("job-1", true, 2));
  c.change_id = 42;
  c.actor = "oncall \"ana\"";
  c.bulk_id = "freeze-acme";
  c.source = SourcePosition{3, 1234, 1795354620000LL};
  c.changed_at = 1795354621500LL;
  const nlohmann::json e = nlohmann::json::parse(EncodeJobChangeJson(c));
  EXPECT_EQ(e["version"], kJobChangeEventVersion);
  EXPECT_EQ(e["changeId"], 42);
  EXPECT_EQ(e["jobId"], "job-1");
  EXPECT_EQ(e["op"], "pause");
  EXPECT_EQ(e["bulkId"], "freeze-acme");
  EXPECT_EQ(e["actor"], "oncall \"ana\"");
  EXPECT_TRUE(e["reason"].is_null());
  EXPECT_EQ(e["source"]["partition"], 3);
  EXPECT_EQ(e["source"]["offset"], 1234);
  EXPECT_EQ(e["source"]["timestamp"], "2026-11-22T13:37:00.000Z");
  EXPECT_EQ(e["changedAt"], "2026-11-22T13:37:01.500Z");
  EXPECT_EQ(e["before"]["id"], "job-1");
  EXPECT_TRUE(e["after"]["paused"].get<bool>());
  EXPECT_TRUE(e["detail"].is_null());
  c.after_json.clear();
  c.detail_json = R"({"slots":1})";
  const nlohmann::json d = nlohmann::json::parse(EncodeJobChangeJson(c));
  EXPECT_TRUE(d["after"].is_null());
  EXPECT_EQ(d["detail"]["slots"], 1);
}

}  // namespace
}  // namespace belfry
