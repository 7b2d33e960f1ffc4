// Job labels in the PostgreSQL store (migration 0013): stored with an upsert, read back in the
// canonical form, replaced by the next upsert, and the listing by labels through the GIN index.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "labelled_job_action.h"
#include "migrated_database_test.h"
#include "pg/pg_job_store.h"

namespace belfry {
namespace {

class PgJobLabelsTest : public MigratedDatabaseTest {
 protected:
  void SetUp() override {
    MigratedDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    store_ = std::make_unique<PgJobStore>(db().url());
  }

  static JobAction Job(const std::string& id, const std::string& owner, const std::string& labels, int64_t offset) {
    return LabelledJobAction(id, owner, labels, offset, kMigratedShardCount);
  }

  std::vector<std::string> Ids(const std::string& labels, const std::string& owner = "", int32_t limit = 100,
                               const std::string& after = "") {
    JobListFilter f;
    f.labels = labels;
    f.owner = owner;
    f.limit = limit;
    f.after_id = after;
    StatusOr<JobPage> jobs = store_->ListJobs(f);
    EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
    std::vector<std::string> ids;
    if (jobs.ok()) {
      for (const StoredJob& j : jobs->jobs) ids.push_back(j.spec.id);
    }
    return ids;
  }

  std::unique_ptr<PgJobStore> store_;
};

TEST_F(PgJobLabelsTest, StoredReadBackCanonicalAndReplacedByTheNextUpsert) {
  ASSERT_TRUE(store_->ApplyActions({Job("a", "", R"({"carrier":"acme","team":"tracking"})", 1),
                                    Job("plain", "", "", 1)})
                  .ok());
  StatusOr<std::optional<StoredJob>> a = store_->GetJob("a");
  ASSERT_TRUE(a.ok() && a->has_value());
  EXPECT_EQ((*a)->spec.labels_json, R"({"carrier":"acme","team":"tracking"})") << "not jsonb's own spelling";
  StatusOr<std::optional<StoredJob>> plain = store_->GetJob("plain");
  ASSERT_TRUE(plain.ok() && plain->has_value());
  EXPECT_EQ((*plain)->spec.labels_json, "");
  EXPECT_EQ(db().Exec("SELECT count(*) FROM jobs WHERE labels = '{}'::jsonb")[0][0].as<int64_t>(), 1);

  ASSERT_TRUE(store_->ApplyActions({Job("a", "", "", 2)}).ok());
  EXPECT_EQ((*store_->GetJob("a"))->spec.labels_json, "") << "an upsert without labels clears them";
}

TEST_F(PgJobLabelsTest, ListsByLabelsAndOwnerWithKeysetPages) {
  std::vector<JobAction> jobs;
  for (int i = 0; i < 30; ++i) {
    const std::string team = i % 3 == 0 ? "tracking" : "billing";
    const std::string region = i % 2 == 0 ? "eu" : "us";
    jobs.push_back(Job("j" + std::to_string(100 + i), i < 15 ? "svc-a" : "svc-b",
                       R"({"region":")" + region + R"(","team":")" + team + R"("})", 1));
  }
  jobs.push_back(Job("unlabelled", "svc-a", "", 1));
  ASSERT_TRUE(store_->ApplyActions(jobs).ok());

  std::vector<std::string> expected;
  for (int i = 0; i < 30; i += 6) expected.push_back("j" + std::to_string(100 + i));  // tracking and eu
  EXPECT_EQ(Ids(R"({"region":"eu","team":"tracking"})"), expected);
  EXPECT_EQ(Ids(R"({"team":"tracking"})").size(), 10u);
  EXPECT_EQ(Ids(R"({"team":"tracking"})", "svc-b"), (std::vector<std::string>{"j115", "j118", "j121", "j124", "j127"}));
  EXPECT_EQ(Ids(R"({"team":"tracking"})", "", 3, "j106"), (std::vector<std::string>{"j109", "j112", "j115"}));
  EXPECT_TRUE(Ids(R"({"team":"nobody"})").empty());
  EXPECT_EQ(Ids("").size(), 31u) << "no label filter lists every job";

  // The partial GIN index serves the filter: the query repeats its predicate.
  std::string full;
  for (const auto& row : db().Exec("SET enable_seqscan = off; EXPLAIN SELECT id FROM jobs_shard_000"
                                   " WHERE labels @> '{\"team\":\"tracking\"}'::jsonb AND labels <> '{}'::jsonb")) {
    full += row[0].as<std::string>() + "\n";
  }
  EXPECT_NE(full.find("labels_idx"), std::string::npos) << full;
}

}  // namespace
}  // namespace belfry
