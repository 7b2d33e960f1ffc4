// Issue 19, part 2: `belfry reshard --to 240` on three running `belfry serve` nodes firing 1,200
// one-minute jobs (docs/resharding.md). The first reshard process is SIGKILLed mid-move (by the
// record, after old shard 20) and a second carries on; a node is SIGKILLed while that move runs,
// and restarted. Every (job, minute) from before the reshard to after the cut-over must fire
// exactly once at its layout's slot: 500 ms ticks before the cut-over minute, 250 ms from it on.
// Duplicates are allowed only in shard-minutes the node kill interrupted (at least once, as ever).
//
// Why it takes minutes of real time: the cut-over is a minute boundary after a lead time, and every
// (job, minute) across it is checked on three live nodes while they are killed. The layout rules
// are unit-tested (core_test: ShardLayout) and pg_test.PgReshardTest moves rows without waiting.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "belfry_process.h"
#include "core/iso_time.h"
#include "core/shard_hash.h"
#include "core/shard_layout.h"
#include "core/slot_math.h"
#include "itest_support.h"
#include "plain_producer.h"

namespace belfry {
namespace {

constexpr int kJobs = 1200;
constexpr int kNodes = 3;

TEST(ReshardTest, ThreeNodesGoFrom120To240UnderLoadAcrossKillsAndMissNothing) {
  std::unique_ptr<ItestWorld> world = ItestWorld::Create("reshard");
  ASSERT_NE(world, nullptr);
  PlainProducer producer(world->brokers);
  TopicCollector triggers(world->brokers, {world->trigger_topic});
  auto env_for = [&](int i) {
    auto env = world->Env();
    env["BELFRY_NODE_ID"] = "node-" + std::string(1, static_cast<char>('a' + i));
    return env;
  };
  auto log_for = [&](int i, int incarnation) {
    return "/tmp/belfry-" + world->run_id + "-node" + std::to_string(i) + "-" + std::to_string(incarnation) + ".log";
  };
  std::vector<std::unique_ptr<BelfryProcess>> nodes;
  for (int i = 0; i < kNodes; ++i) nodes.push_back(std::make_unique<BelfryProcess>(env_for(i), log_for(i, 0)));
  for (auto& n : nodes) ASSERT_TRUE(n->WaitForLog("belfry serving", 60'000)) << n->Log();

  const std::vector<std::string> ids = MakeIds(world->run_id + "-r", kJobs);
  ASSERT_EQ(PublishUpserts(producer, world->commands_topic, ids, 1, world->trigger_topic), 0u);
  ASSERT_TRUE(WaitFor([&] { return CountFresh(world->db->url(), "SELECT count(*) FROM jobs") == kJobs; }, 120'000));
  // Every minute from the next whole one on must fire: the jobs were committed before it.
  const int64_t first_minute = EpochMinuteOf(WallMs()) + 1;
  SleepUntilWallMs(first_minute * 60'000 + 15'000);

  // How far the move has gone, by the record: -2 before it began.
  auto moved_through = [&]() -> int {
    const std::optional<pqxx::result> r =
        QueryFresh(world->db->url(), "SELECT value FROM belfry_meta WHERE key = 'layout'");
    if (!r || r->empty()) return -2;
    StatusOr<ShardLayout> l = ParseShardLayout((*r)[0][0].as<std::string>());
    if (!l.ok() || l->phase == ShardLayout::Phase::kStable) return -2;
    return l->phase == ShardLayout::Phase::kMoving ? l->moved_through : 1000;
  };
  auto poll_until_moved = [&](int shards) {
    const EpochMs give_up = WallMs() + 60'000;
    while (moved_through() < shards && WallMs() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };

  // The first reshard process is SIGKILLed in the middle of the move...
  const std::string pid_file = "/tmp/belfry-" + world->run_id + "-reshard.pid";
  std::string cmd = "env";
  for (const auto& [k, v] : env_for(0)) cmd += " " + k + "='" + v + "'";
  cmd += " " + BelfryBinary() + " reshard --to 240 --lead 60s >/dev/null 2>&1 & echo $! > " + pid_file;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  poll_until_moved(20);
  const int killed_at_shard = moved_through();
  {
    std::ifstream in(pid_file);
    pid_t pid = 0;
    in >> pid;
    ASSERT_GT(pid, 0);
    kill(pid, SIGKILL);
  }
  Note("SIGKILLed the first reshard process with the move at old shard " + std::to_string(killed_at_shard));
  EXPECT_GE(killed_at_shard, 20);
  EXPECT_LT(killed_at_shard, 119) << "the move finished before the kill: the test proves less";
  // ... and a second carries on from the record, while node-a is SIGKILLed mid-move too.
  std::string out;
  int rc = -1;
  std::thread second([&] { rc = RunBelfry({"reshard", "--to", "240", "--lead", "60s"}, env_for(0), &out); });
  poll_until_moved(killed_at_shard + 30);
  nodes[0]->Kill();
  const EpochMs killed = WallMs();
  Note("SIGKILLed node-a with the move at old shard " + std::to_string(moved_through()));
  second.join();
  ASSERT_EQ(rc, 0) << out;
  Note(out.substr(0, 200));
  // node-a comes back only once its firing claims and debt leases (scheduler.claim_lease, 3 s)
  // have lapsed by the database's clock, so the other nodes have had to take its shards over.
  ASSERT_TRUE(WaitFor(
      [&] {
        return CountFresh(world->db->url(),
                          "SELECT count(*) FROM shard_state WHERE (claim_node = 'node-a' AND claim_until > now())"
                          " OR (debt_node = 'node-a' AND debt_until > now())") == 0;
      },
      60'000));
  nodes[0] = std::make_unique<BelfryProcess>(env_for(0), log_for(0, 1));

  StatusOr<ShardLayout> layout =
      ParseShardLayout(world->db->Exec("SELECT value FROM belfry_meta WHERE key = 'layout'")[0][0].as<std::string>());
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  ASSERT_EQ(layout->phase, ShardLayout::Phase::kCutover);
  const int64_t c = layout->cutover_minute;
  const int64_t last_minute = c + 1;

  // Issue 33 §4: every reader takes the layout from the record, not from the node's configured
  // shard count. node-b is configured with 120 shards (the default) and was never restarted; before
  // the minutes come, it predicts them, and below its predictions are held to what was fired.
  const int port = nodes[1]->AdminPort();
  ASSERT_GT(port, 0) << nodes[1]->Log();
  const int64_t predicted_from = EpochMinuteOf(WallMs()) + 1;  // whole minutes not yet begun
  ASSERT_LE(predicted_from, last_minute) << "the minute after the cut-over began before the readers were asked";
  std::map<std::string, std::set<EpochMs>> next_of;  // a sample of jobs: their predicted instants
  for (size_t k = 0; k < ids.size(); k += ids.size() / 24) {
    int status = 0;
    const std::string body = HttpGet(port, "/v1/jobs/" + ids[k] + "/next?n=10", &status).value_or("");
    ASSERT_EQ(status, 200) << body;
    const nlohmann::json next = nlohmann::json::parse(body)["next"];
    ASSERT_EQ(next.size(), 10u) << "an every-minute job has 10 next fires: " << body;
    for (const auto& t : next) {
      const std::optional<EpochMs> at = ParseIsoTime(t.get<std::string>());
      ASSERT_TRUE(at.has_value()) << body;
      next_of[ids[k]].insert(*at);
    }
  }
  int load_status = 0;
  const std::string load_body =
      HttpGet(port,
              "/v1/load?from=" + FormatIsoTime(last_minute * kMsPerMinute) +
                  "&to=" + FormatIsoTime((last_minute + 1) * kMsPerMinute) + "&shards=true",
              &load_status)
          .value_or("");
  ASSERT_EQ(load_status, 200) << load_body;
  const nlohmann::json load = nlohmann::json::parse(load_body);
  ASSERT_EQ(load["minutes"].size(), 1u) << load_body;
  const std::vector<int64_t> projected = load["minutes"][0]["shards"].get<std::vector<int64_t>>();

  SleepUntilWallMs((last_minute + 1) * 60'000 + 10'000);
  for (int i = 0; i < kNodes; ++i) EXPECT_TRUE(nodes[i]->running()) << nodes[i]->Log();

  // Each (job, minute) in [first_minute, last_minute] once, at its layout's slot.
  std::map<std::pair<std::string, EpochMs>, int> got;
  for (const TailRecord& r : triggers.records()) {
    auto jid = r.headers.find("belfry-job-id");
    auto sf = r.headers.find("belfry-scheduled-for");
    if (jid == r.headers.end() || sf == r.headers.end()) continue;
    ++got[{jid->second, std::stoll(sf->second)}];
  }
  int64_t expected = 0, missing = 0, duplicates = 0, unexplained_duplicates = 0;
  std::set<std::pair<std::string, EpochMs>> want;
  for (const std::string& id : ids) {
    for (int64_t m = first_minute; m <= last_minute; ++m) {
      const MinuteLayout firing = FiringLayout(*layout, m);
      const EpochMs slot = SlotMs(m, ShardForId(id, firing.shard_count), firing.tick_ms);
      want.insert({id, slot});
      ++expected;
      const auto it = got.find({id, slot});
      if (it == got.end()) {
        ++missing;
        continue;
      }
      if (it->second > 1) {
        duplicates += it->second - 1;
        // A shard-minute the kill interrupted started before the kill and after its slot - 15 s.
        if (slot < killed - 15'000 || slot > killed + 1'000) unexplained_duplicates += it->second - 1;
      }
    }
  }
  int64_t unexpected = 0;
  for (const auto& [key, n] : got) {
    if (key.second < first_minute * 60'000 || key.second >= (last_minute + 1) * 60'000) continue;
    if (!want.count(key)) unexpected += n;
  }
  Note("reshard 120 -> 240, cut-over minute " + std::to_string(c) + ": expected " + std::to_string(expected) +
       ", missing " + std::to_string(missing) + ", duplicates " + std::to_string(duplicates) + " (" +
       std::to_string(unexplained_duplicates) + " outside the kill), at a wrong slot " + std::to_string(unexpected));
  EXPECT_GT(expected, static_cast<int64_t>(kJobs) * 3);
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(unexplained_duplicates, 0);
  EXPECT_EQ(unexpected, 0);
  // The new layout really is in use: new shards fired the cut-over minute.
  EXPECT_EQ(world->db->Exec("SELECT count(*) FROM shard_state WHERE shard >= 120 AND fired_through >= " +
                            std::to_string(c))[0][0]
                .as<int64_t>(),
            120);

  // /next: each sampled job's predicted instants in [predicted_from, last_minute] are exactly its
  // fired ones.
  const auto in_checked_minutes = [&](EpochMs at) {
    return at >= predicted_from * kMsPerMinute && at < (last_minute + 1) * kMsPerMinute;
  };
  size_t compared = 0;
  for (const auto& [id, predicted] : next_of) {
    std::set<EpochMs> fired, said;
    for (const auto& [key, n] : got) {
      if (key.first == id && in_checked_minutes(key.second)) fired.insert(key.second);
    }
    for (EpochMs at : predicted) {
      if (in_checked_minutes(at)) said.insert(at);
    }
    compared += fired.size();
    EXPECT_EQ(said, fired) << "GET /v1/jobs/" << id << "/next disagrees with the triggers fired";
  }
  Note("/next of " + std::to_string(next_of.size()) + " jobs held to " + std::to_string(compared) +
       " fired triggers, minutes " + std::to_string(predicted_from) + ".." + std::to_string(last_minute));
  EXPECT_GE(compared, next_of.size() * 2) << "too few minutes were predicted before they came";
  EXPECT_EQ(next_of.size(), 24u);
  // /v1/load: the projection of last_minute (240 shards) is what each shard fired in it.
  std::vector<int64_t> fired_by_shard(240, 0);
  const MinuteLayout after = FiringLayout(*layout, last_minute);
  for (const auto& [key, n] : got) {
    if (key.second < last_minute * kMsPerMinute || key.second >= (last_minute + 1) * kMsPerMinute) continue;
    const int64_t shard = (key.second - last_minute * kMsPerMinute) / after.tick_ms;
    if (shard >= 0 && shard < 240) ++fired_by_shard[shard];
  }
  EXPECT_EQ(projected, fired_by_shard) << "GET /v1/load's shards for minute " << last_minute;
  EXPECT_EQ(load["minutes"][0]["triggers"].get<int64_t>(), kJobs) << load_body;
  EXPECT_EQ(load["shardCount"].get<int64_t>(), 240) << load_body;
  EXPECT_EQ(load["tickMs"].get<int64_t>(), 250) << load_body;
  // /v1/shards and `belfry shards --json` (a CLI configured with 120 too): the 240 shards, each
  // fired through last_minute at least and none lagging.
  int shards_status = 0;
  const std::string shards_body = HttpGet(port, "/v1/shards", &shards_status).value_or("");
  ASSERT_EQ(shards_status, 200) << shards_body;
  std::string cli_out;
  ASSERT_EQ(RunBelfry({"shards", "--json"}, env_for(1), &cli_out), 0) << cli_out;
  const size_t json_at = cli_out.find("{\"now\"");  // the CLI prints GET /v1/shards's view
  ASSERT_NE(json_at, std::string::npos) << cli_out;
  for (const auto& [who, view] : {std::pair{"GET /v1/shards", nlohmann::json::parse(shards_body)},
                                  std::pair{"belfry shards --json", nlohmann::json::parse(cli_out.substr(json_at))}}) {
    const nlohmann::json& list = view["shards"];
    ASSERT_EQ(list.size(), 240u) << who;
    for (size_t i = 0; i < list.size(); ++i) {
      EXPECT_EQ(list[i]["shard"].get<int64_t>(), static_cast<int64_t>(i)) << who;
      EXPECT_GE(list[i]["fired_through_minute"].get<int64_t>(), last_minute) << who << " shard " << i;
      EXPECT_LT(list[i]["lag_seconds"].get<double>(), 30.0) << who << " shard " << i << ": " << list[i].dump();
    }
  }
}

}  // namespace
}  // namespace belfry
