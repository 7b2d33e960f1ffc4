// Issue 33 section 1 on the real servers: one job whose trigger the broker refuses for good,
// among 20 healthy every-minute jobs of the same shard, for each record-error kind producible on
// the local stack, the three kinds at once in one belfry process (each in its own shard):
//   - too large: the job's topic has max.message.bytes=100, the job 300 bytes of details;
//   - denied: an ACL denies the client writes to the job's topic (the local broker runs KRaft's
//     StandardAuthorizer, open wherever no ACL is set), so the broker answers
//     TOPIC_AUTHORIZATION_FAILED;
//   - unknown topic with auto-creation off: the job's topic does not exist, and the node runs
//     with kafka.properties allow.auto.create.topics=false (the shared broker auto-creates topics,
//     so the setting is the producer's); librdkafka fails its messages after
//     topic.metadata.propagation.max.ms (10 s in belfry).
//
// Requires, over three slots of each shard (on time, missed while the node was killed and fired
// from the catch-up debt after its restart, on time again): every healthy (job, slot) exactly
// once; exactly one dead letter per bad (job, slot); the shards' watermarks moving.
//
// Why it takes about 3 minutes: every job fires once a minute, and the run needs an on-time
// slot, a missed slot caught up after a restart, and an on-time slot after it.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "belfry/config.h"
#include "belfry_process.h"
#include "core/slot_math.h"
#include "itest_support.h"
#include "kafka/topic_admin.h"
#include "plain_producer.h"
#include "trigger_verifier.h"

namespace belfry {
namespace {

constexpr int kHealthyPerShard = 20;
constexpr int64_t kTickMs = 500;

std::string JobCommand(const std::string& id, const std::string& topic, size_t pad) {
  return R"({"id":")" + id + R"(","intervalMinutes":1,"topic":")" + topic +
         R"(","owner":"itest","jobDetails":{"pad":")" + std::string(pad, 'x') + "\"}}";
}

// The dead letters per "job@slot".
std::map<std::string, int> DeadLetters(const TopicCollector& dlq, std::map<std::string, std::string>* reasons) {
  std::map<std::string, int> out;
  for (const TailRecord& r : dlq.records()) {
    const auto job = r.headers.find("belfry-job-id");
    const auto slot = r.headers.find("belfry-scheduled-for");
    if (job == r.headers.end() || slot == r.headers.end()) continue;
    ++out[job->second + "@" + slot->second];
    const auto reason = r.headers.find("belfry-error-reason");
    const auto target = r.headers.find("belfry-target-topic");
    (*reasons)[job->second] = (reason == r.headers.end() ? "?" : reason->second) + " " +
                              (target == r.headers.end() ? "?" : target->second);
  }
  return out;
}

TEST(PoisonTest, ARefusedTriggerIsDeadLetteredOnceAndItsShardMatesFireOnce) {
  const int64_t test_start = WallMs();
  std::unique_ptr<ItestWorld> world = ItestWorld::Create("poison");
  ASSERT_NE(world, nullptr);
  KafkaConfig kafka;
  kafka.brokers = world->brokers;
  const std::string small_topic = world->trigger_topic + ".small";
  const std::string missing_topic = world->trigger_topic + ".missing";  // never created
  const std::string denied_topic = world->trigger_topic + ".denied";
  ASSERT_TRUE(EnsureTopics(kafka, {TopicSpec{world->trigger_topic, 3, -1, {}},
                                   TopicSpec{small_topic, 1, -1, {{"max.message.bytes", "100"}}},
                                   TopicSpec{denied_topic, 1, -1, {}}})
                  .ok());
  ASSERT_EQ(DenyTopicWrites(world->brokers, denied_topic), "")
      << "the broker needs the authorizer of deploy/kafka/server.properties.in: a broker started "
         "before it had one is restarted by `scripts/local-stack up` (or kafka-restart)";
  TriggerVerifier verifier(world->brokers, {world->trigger_topic});
  TopicCollector dlq(world->brokers, {world->triggers_dlq_topic});

  const std::string config_path = "/tmp/belfry-" + world->run_id + ".yaml";
  {
    std::ofstream yaml(config_path);
    yaml << "kafka:\n  properties:\n    allow.auto.create.topics: \"false\"\n";
  }
  auto env = world->Env();
  env["BELFRY_CONFIG"] = config_path;
  env["BELFRY_NODE_ID"] = "poison-node";
  // A slot missed by more than 5 s becomes catch-up debt, so a short kill makes some.
  env["BELFRY_SCHEDULER_MISFIRE_THRESHOLD"] = "5s";
  auto node = std::make_unique<BelfryProcess>(env, "/tmp/belfry-" + world->run_id + "-1.log");
  ASSERT_TRUE(node->WaitForLog("belfry serving", 60'000)) << node->Log();

  // Shards whose slots come ~35 s from now: time to load the jobs before the first.
  const EpochMs now = WallMs();
  // Three consecutive shards that do not wrap past 119, so that their slots share each minute.
  const int32_t s_big = std::min<int32_t>(static_cast<int32_t>(((now + 35'000) % 60'000) / kTickMs), 117);
  const int32_t s_gone = s_big + 1;
  const int32_t s_denied = s_big + 2;
  const int64_t m1 = EpochMinuteOf(SlotMs(EpochMinuteOf(now + 35'000), s_big, kTickMs));
  std::vector<std::string> healthy = IdsInShard(world->run_id + "-big", s_big, kHealthyPerShard + 1);
  const std::string bad_big = healthy.back();
  healthy.pop_back();
  std::vector<std::string> gone = IdsInShard(world->run_id + "-gone", s_gone, kHealthyPerShard + 1);
  const std::string bad_gone = gone.back();
  gone.pop_back();
  healthy.insert(healthy.end(), gone.begin(), gone.end());
  std::vector<std::string> denied = IdsInShard(world->run_id + "-denied", s_denied, kHealthyPerShard + 1);
  const std::string bad_denied = denied.back();
  denied.pop_back();
  healthy.insert(healthy.end(), denied.begin(), denied.end());

  std::vector<PlainMessage> commands;
  for (const std::string& id : healthy) commands.push_back({id, JobCommand(id, world->trigger_topic, 20), {}});
  commands.push_back({bad_big, JobCommand(bad_big, small_topic, 300), {}});
  commands.push_back({bad_gone, JobCommand(bad_gone, missing_topic, 20), {}});
  commands.push_back({bad_denied, JobCommand(bad_denied, denied_topic, 20), {}});
  PlainProducer producer(world->brokers);
  for (const auto& [partition, offset] : producer.SendBatch(world->commands_topic, commands)) {
    ASSERT_GE(offset, 0);
  }
  const int64_t total = static_cast<int64_t>(commands.size());
  ASSERT_TRUE(
      WaitFor([&] { return CountFresh(world->db->url(), "SELECT count(*) FROM jobs") == total; }, 30'000));
  const std::vector<ExpectedJob> all = LoadJobs(world->db->url(), world->run_id);
  std::vector<ExpectedJob> jobs;
  for (const ExpectedJob& j : all) {
    if (j.id != bad_big && j.id != bad_gone && j.id != bad_denied) jobs.push_back(j);
  }
  ASSERT_EQ(jobs.size(), healthy.size());
  const EpochMs slot1 = SlotMs(m1, s_big, kTickMs);
  ASSERT_GT(slot1, WallMs() + 2000) << "the jobs loaded too late for the first slot";

  // Slot 1 on time. Then kill the node between slots, and restart it 10 s after slot 2, which
  // becomes debt; slot 3 on time.
  SleepUntilWallMs(slot1 + 50'000);
  node->Kill();
  const EpochMs slot2 = SlotMs(m1 + 1, s_big, kTickMs);
  SleepUntilWallMs(slot2 + 10'000);
  node = std::make_unique<BelfryProcess>(env, "/tmp/belfry-" + world->run_id + "-2.log");
  ASSERT_TRUE(node->WaitForLog("belfry serving", 60'000)) << node->Log();
  const EpochMs slot3 = SlotMs(m1 + 2, s_big, kTickMs);
  // The unknown topic's refusal takes topic.metadata.propagation.max.ms (10 s) to come.
  SleepUntilWallMs(slot3 + 15'000);

  const VerifyReport report = verifier.WaitComplete(jobs, slot1, slot3 + 2 * kTickMs + 1, 30'000);
  Note(report.Summary("poison: healthy jobs of the poisoned shards, three slots across a restart"));
  report.Record("poison");
  EXPECT_EQ(report.expected, 3 * 3 * kHealthyPerShard);
  EXPECT_EQ(report.missing, 0);
  EXPECT_EQ(report.duplicates, 0);
  EXPECT_EQ(report.unexpected, 0);

  // Exactly one dead letter per bad (job, slot).
  std::map<std::string, int> letters;
  std::map<std::string, std::string> reasons;
  EXPECT_TRUE(WaitFor(
      [&] {
        letters = DeadLetters(dlq, &reasons);
        return letters.size() >= 9;
      },
      20'000));
  std::map<std::string, int> want;
  for (int64_t m = m1; m <= m1 + 2; ++m) {
    want[bad_big + "@" + std::to_string(SlotMs(m, s_big, kTickMs))] = 1;
    want[bad_gone + "@" + std::to_string(SlotMs(m, s_gone, kTickMs))] = 1;
    want[bad_denied + "@" + std::to_string(SlotMs(m, s_denied, kTickMs))] = 1;
  }
  EXPECT_EQ(letters, want);
  EXPECT_EQ(reasons[bad_big], "message_too_large " + small_topic);
  EXPECT_EQ(reasons[bad_gone], "unknown_topic " + missing_topic);
  EXPECT_EQ(reasons[bad_denied], "topic_authorization " + denied_topic);

  // The watermarks moved past every slot; nothing is owed.
  const std::string shards =
      "(" + std::to_string(s_big) + "," + std::to_string(s_gone) + "," + std::to_string(s_denied) + ")";
  const std::optional<pqxx::result> state =
      QueryFresh(world->db->url(), "SELECT min(fired_through) FROM shard_state WHERE shard IN " + shards);
  ASSERT_TRUE(state.has_value());
  EXPECT_GE((*state)[0][0].as<int64_t>(), m1 + 2);
  EXPECT_EQ(CountFresh(world->db->url(),
                       "SELECT coalesce(sum(upper(r) - lower(r)), 0) FROM shard_state, unnest(debt) AS r "
                       "WHERE shard IN " + shards),
            0);

  // The metric and the job view.
  const int port = node->AdminPort();
  ASSERT_GT(port, 0);
  const std::string metrics = HttpGet(port, "/metrics").value_or("");
  EXPECT_GE(MetricValue(metrics, "belfry_triggers_refused_total{reason=\"message_too_large\"}").value_or(0), 2);
  EXPECT_GE(MetricValue(metrics, "belfry_triggers_refused_total{reason=\"unknown_topic\"}").value_or(0), 2);
  EXPECT_GE(MetricValue(metrics, "belfry_triggers_refused_total{reason=\"topic_authorization\"}").value_or(0), 2);
  const std::string view = HttpGet(port, "/v1/jobs/" + bad_big).value_or("");
  EXPECT_NE(view.find("\"lastDeliveryError\":{\"error\":"), std::string::npos) << view;
  EXPECT_NE(view.find("\"topic\":\"" + small_topic + "\""), std::string::npos) << view;
  const std::string healthy_view = HttpGet(port, "/v1/jobs/" + healthy.front()).value_or("");
  EXPECT_NE(healthy_view.find("\"lastDeliveryError\":null"), std::string::npos) << healthy_view;

  EXPECT_EQ(node->Terminate(15'000), 0) << node->Log();
  Note("poison test wall time " + std::to_string((WallMs() - test_start) / 1000) + " s");
}

}  // namespace
}  // namespace belfry
