#include "core/job_change.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/job_json.h"

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

TEST(JobChangeBetweenTest, AChangeStoresOnlyTheIdTheFieldsThatDifferAndUpdatedAt) {
  StoredJob before = Job("a", false, 1);
  before.spec.details_json = std::string(600, ' ').insert(0, "{\"pad\":\"").append("\"}");
  StoredJob after = before;
  after.paused = true;
  after.pause_reason = "carrier outage";
  after.updated_at = 2;
  const std::optional<JobChange> c = JobChangeBetween("a", "pause", before, after);
  ASSERT_TRUE(c);
  const nlohmann::ordered_json b = nlohmann::ordered_json::parse(c->before_json);
  const nlohmann::ordered_json a = nlohmann::ordered_json::parse(c->after_json);
  std::vector<std::string> names;
  for (const auto& [name, value] : a.items()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"id", "paused", "pause", "updatedAt"}));
  EXPECT_EQ(b.size(), a.size());
  EXPECT_FALSE(b["paused"].get<bool>());
  EXPECT_TRUE(b["pause"].is_null());
  EXPECT_EQ(a["pause"]["reason"], "carrier outage");
  EXPECT_LT(c->before_json.size() + c->after_json.size(), 250u) << "the 600-byte details are not copied";
  const std::optional<JobChange> created = JobChangeBetween("a", "upsert", std::nullopt, after);
  EXPECT_EQ(created->after_json, EncodeJobJson(after)) << "a create stores the whole job";
  const std::optional<JobChange> deleted = JobChangeBetween("a", "delete", after, std::nullopt);
  EXPECT_EQ(deleted->before_json, EncodeJobJson(after)) << "a delete stores the whole job";
}

TEST(ExpandJobChangesTest, StoredChangesBecomeWholeViewsWalkingBackFromTheJob) {
  const StoredJob v1 = Job("a", false, 1);
  StoredJob v2 = v1;
  v2.spec.interval_minutes = 10;
  v2.updated_at = 2;
  StoredJob v3 = v2;
  v3.paused = true;
  v3.updated_at = 3;
  std::vector<JobChange> h;  // newest first, as stored
  h.push_back(*JobChangeBetween("a", "pause", v2, v3));
  h.push_back(*JobChangeBetween("a", "upsert", v1, v2));
  h.push_back(*JobChangeBetween("a", "upsert", std::nullopt, v1));
  h.insert(h.begin() + 1, JobChange{});  // a trigger between: the job as it was
  h[1].job_id = "a";
  h[1].op = "trigger";
  h[1].before_json = h[1].after_json = JobFireSnapshot("a");
  h[1].detail_json = R"({"slots":1})";
  std::vector<JobChange> from_row = h;
  ExpandJobChanges(EncodeJobJson(v3), &from_row);
  auto same = [](const std::string& got, const StoredJob& want) {
    return nlohmann::json::parse(got) == nlohmann::json::parse(EncodeJobJson(want));
  };
  EXPECT_TRUE(same(from_row[0].after_json, v3));
  EXPECT_TRUE(same(from_row[0].before_json, v2));
  EXPECT_TRUE(same(from_row[1].after_json, v2)) << "a trigger shows the job as it was";
  EXPECT_EQ(from_row[1].before_json, from_row[1].after_json);
  EXPECT_TRUE(same(from_row[2].after_json, v2));
  EXPECT_TRUE(same(from_row[2].before_json, v1));
  EXPECT_TRUE(same(from_row[3].after_json, v1));
  EXPECT_TRUE(from_row[3].before_json.empty());
  // Without the job's row (a one-shot swept without a recorded delete), the walk starts from the
  // create instead, forward.
  std::vector<JobChange> from_create = h;
  ExpandJobChanges("", &from_create);
  for (size_t i = 0; i < h.size(); ++i) {
    EXPECT_EQ(nlohmann::json::parse(from_create[i].after_json), nlohmann::json::parse(from_row[i].after_json)) << i;
  }
  // With neither, a change keeps what it stored.
  std::vector<JobChange> alone(h.begin(), h.begin() + 1);
  ExpandJobChanges("", &alone);
  EXPECT_EQ(alone[0].after_json, h[0].after_json);
  // A delete's before is the job; what comes before it walks back from there.
  std::vector<JobChange> with_delete = h;
  with_delete.insert(with_delete.begin(), *JobChangeBetween("a", "delete", v3, std::nullopt));
  ExpandJobChanges("", &with_delete);
  EXPECT_TRUE(same(with_delete[1].before_json, v2));
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
