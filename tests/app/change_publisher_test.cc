// ChangePublisher over the fake store: events go out keyed by job id, in change order, as the
// versioned change event; a refused batch is published again, whole and first, by the next round.
#include "app/change_publisher.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "fakes/fake_clock.h"
#include "fakes/fake_job_store.h"

namespace belfry {
namespace {

constexpr EpochMs kStart = 1'795'354'620'000;

TEST(ChangePublisherTest, PublishesEachChangeInOrderAtLeastOnce) {
  FakeJobStore store;
  FakeClock clock(kStart);
  for (int i = 0; i < 5; ++i) {
    JobChange c;
    c.job_id = i % 2 == 0 ? "a" : "b";
    c.op = "upsert";
    c.after_json = R"({"id":")" + c.job_id + R"("})";
    c.source = SourcePosition{0, i, kStart};
    c.changed_at = kStart + i;
    store.AddChange(std::move(c));
  }
  std::vector<std::pair<std::string, std::string>> sent;
  int refuse = 1;
  ChangePublisherOptions options;
  options.batch = 3;
  int64_t published_total = 0, failed_total = 0;
  options.on_round = [&](int64_t published, int64_t failed) {
    published_total += published;
    failed_total += failed;
  };
  ChangePublisher publisher(
      store, clock,
      [&](const std::vector<std::pair<std::string, std::string>>& records) {
        sent.insert(sent.end(), records.begin(), records.end());
        if (refuse > 0) {
          --refuse;
          return Status::Retryable("broker down");
        }
        return Status::Ok();
      },
      options);
  EXPECT_FALSE(publisher.RunOnce().ok());
  EXPECT_EQ(store.published_changes(), 0);
  StatusOr<int64_t> n = publisher.RunOnce();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 3);
  n = publisher.RunOnce();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 2);
  n = publisher.RunOnce();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0);
  EXPECT_EQ(store.published_changes(), 5);
  EXPECT_EQ(published_total, 5);
  EXPECT_EQ(failed_total, 3) << "the refused round's events";

  ASSERT_EQ(sent.size(), 3u + 5u) << "the refused batch, then every change once";
  std::vector<int64_t> ids;
  for (size_t i = 3; i < sent.size(); ++i) {
    const nlohmann::json e = nlohmann::json::parse(sent[i].second);
    EXPECT_EQ(sent[i].first, e["jobId"]) << "keyed by job id";
    EXPECT_EQ(e["version"], 1);
    EXPECT_EQ(e["after"]["id"], e["jobId"]);
    ids.push_back(e["changeId"]);
  }
  EXPECT_EQ(ids, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(sent[0], sent[3]) << "the refused batch comes again first";
}

}  // namespace
}  // namespace belfry
