// BulkOpRunner over the fake store: steps until the walk ends, then publishes the outcome record
// once, at least once when the broker refuses it first.
#include "app/bulk_op_runner.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/shard_hash.h"
#include "fakes/fake_clock.h"
#include "fakes/fake_job_store.h"

namespace belfry {
namespace {

constexpr EpochMs kStart = 1'795'354'620'000;

class BulkOpRunnerTest : public ::testing::Test {
 protected:
  BulkOpRunnerTest() : clock_(kStart) {
    for (int i = 0; i < 50; ++i) {
      JobSpec s;
      s.id = "job-" + std::to_string(i);
      s.shard = ShardForId(s.id, 120);
      s.interval_minutes = 5;
      s.owner = i < 30 ? "fleet" : "other";
      s.topic = "t";
      store_.Put(s, /*paused=*/i == 0);
    }
  }

  BulkOp Pause(const std::string& id) {
    BulkOp op;
    op.id = id;
    op.op = CommandOp::kPause;
    op.selector.owner = "fleet";
    op.source = SourcePosition{1, 7, kStart};
    return op;
  }

  BulkOpRunner Runner() {
    BulkOpRunnerOptions options;
    options.step_jobs = 4;
    return BulkOpRunner(
        store_, clock_,
        [this](const std::string& key, const std::string& value) {
          if (refuse_ > 0) {
            --refuse_;
            return Status::Retryable("broker down");
          }
          published_.emplace_back(key, value);
          return Status::Ok();
        },
        options);
  }

  FakeJobStore store_;
  FakeClock clock_;
  int refuse_ = 0;
  std::vector<std::pair<std::string, std::string>> published_;
};

TEST_F(BulkOpRunnerTest, StepsToTheEndThenPublishesTheOutcomeOnce) {
  ASSERT_TRUE(store_.AcceptBulkOps({Pause("freeze")}).ok());
  BulkOpRunner runner = Runner();
  int steps = 0;
  for (;;) {
    StatusOr<BulkOpRunner::Round> round = runner.RunOnce();
    ASSERT_TRUE(round.ok()) << round.status().ToString();
    if (!round->stepped) break;
    ++steps;
    ASSERT_LT(steps, 1000);
    if (round->published == 0) EXPECT_TRUE(published_.empty()) << "no outcome before the walk ends";
  }
  EXPECT_GE(steps, 30 / 4);
  ASSERT_EQ(published_.size(), 1u);
  EXPECT_EQ(published_[0].first, "freeze");
  EXPECT_EQ(published_[0].second,
            R"({"id":"freeze","op":"pause","status":"applied","error":null,"selector":{"owner":"fleet"},)"
            R"("matched":30,"changed":29,"dryRun":false,"partition":1,"offset":7})");
  int paused = 0;
  for (const auto& [id, row] : store_.rows()) paused += row.paused ? 1 : 0;
  EXPECT_EQ(paused, 30);
  ASSERT_TRUE(runner.RunOnce().ok());
  EXPECT_EQ(published_.size(), 1u) << "published once";
}

TEST_F(BulkOpRunnerTest, AnOutcomeTheBrokerRefusedIsPublishedByALaterRound) {
  ASSERT_TRUE(store_.AcceptBulkOps({Pause("freeze")}).ok());
  BulkOpRunner runner = Runner();
  refuse_ = 1;
  bool failed = false;
  for (int i = 0; i < 1000; ++i) {
    StatusOr<BulkOpRunner::Round> round = runner.RunOnce();
    if (!round.ok()) {
      failed = true;
      continue;
    }
    if (!round->stepped && round->published == 0 && failed) break;
  }
  EXPECT_TRUE(failed);
  ASSERT_EQ(published_.size(), 1u);
  EXPECT_TRUE((*store_.GetBulkOp("freeze"))->published_at.has_value());
}

}  // namespace
}  // namespace belfry
