// `belfry migrate`: the database schema and belfry's own Kafka topics.
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "app/app_support.h"
#include "app/cli_commands.h"
#include "app/cli_support.h"
#include "kafka/topic_admin.h"
#include "pg/migrator.h"

namespace belfry {

int RunMigrate(const Config& cfg, bool create_topics) {
  const std::string dir = ResolveMigrationsDir(cfg);
  if (Status st = Migrate(cfg.database_url, dir, cfg.scheduler.shard_count); !st.ok()) {
    return Fail(fmt::format("migrate failed: {}", st.message()));
  }
  std::printf("database schema is current (migrations from %s, shard_count %d)\n", dir.c_str(),
              cfg.scheduler.shard_count);
  if (create_topics) {
    std::vector<TopicSpec> topics = BelfryTopicSpecs(cfg.kafka);
    topics.push_back(TopicSpec{cfg.kafka.executions_topic, 12, -1, {}});
    topics.push_back(TopicSpec{cfg.kafka.executions_dlq_topic, 3, -1, {}});
    if (Status st = EnsureTopics(cfg.kafka, topics); !st.ok()) {
      return Fail(fmt::format("creating Kafka topics failed: {}", st.message()));
    }
    std::printf("kafka topics exist: %s, %s, %s, %s, %s, %s, %s\n", cfg.kafka.commands_topic.c_str(),
                cfg.kafka.dlq_topic.c_str(), cfg.kafka.results_topic.c_str(), cfg.kafka.executions_topic.c_str(),
                cfg.kafka.executions_dlq_topic.c_str(), cfg.kafka.changes_topic.c_str(),
                cfg.kafka.triggers_dlq_topic.c_str());
  }
  return 0;
}

}  // namespace belfry
