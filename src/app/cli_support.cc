#include "app/cli_support.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/iso_time.h"
#include "core/job_labels.h"
#include "kafka/command_publisher.h"
#include "pg/pg_shard_ledger.h"

namespace belfry {
namespace {

// Who runs the CLI, for the audit trail's belfry-actor header (a command's own "actor" wins):
// "<login>@<host>", or "belfry-cli" when neither is known.
std::string CliActor() {
  const char* user = std::getenv("USER");
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = 0;
  std::string actor = fmt::format("{}@{}", user != nullptr && *user != 0 ? user : "belfry-cli", host);
  if (host[0] == 0) actor.pop_back();
  // The parser's rules for an actor: at most 255 bytes, no control characters.
  std::erase_if(actor, [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
  if (actor.size() > 255) actor.resize(255);
  return actor;
}

}  // namespace

int Fail(const std::string& message, int code) {
  std::fprintf(stderr, "belfry: %s\n", message.c_str());
  return code;
}

std::string AddLabelTerms(const std::vector<std::string>& terms, nlohmann::ordered_json* labels) {
  for (const std::string& term : terms) {
    const auto split = SplitLabelTerm(term);
    if (!split) return fmt::format("--label {} is not key=value", term);
    (*labels)[std::string(split->first)] = std::string(split->second);
  }
  return {};
}

int PublishCommand(const Config& cfg, const std::string& id, const std::optional<std::string>& value,
                   const WaitArgs& wait) {
  CommandPublisherOptions options;
  options.wait_for_outcomes = wait.wait;
  auto publisher = CommandPublisher::Create(cfg.kafka, options);
  if (!publisher.ok()) return Fail(publisher.status().message());
  if (Status st = (*publisher)->Publish(id, value, {{"belfry-actor", CliActor()}}); !st.ok()) {
    return Fail(fmt::format("could not publish to {}: {}", cfg.kafka.commands_topic, st.message()));
  }
  if (!wait.wait) {
    std::printf("published to %s (not waiting for the outcome)\n", cfg.kafka.commands_topic.c_str());
    return 0;
  }
  auto outcome = (*publisher)->WaitForOutcome(id, wait.timeout_ms);
  if (!outcome.ok()) {
    return Fail(fmt::format("published, but no outcome on {} within {} ms (is belfry serve running?)",
                            cfg.kafka.results_topic, wait.timeout_ms),
                3);
  }
  std::printf("%s\n", outcome->c_str());
  const auto parsed = nlohmann::json::parse(*outcome, nullptr, false);
  return parsed.is_object() && parsed.value("status", "") == "applied" ? 0 : 1;
}

StatusOr<ShardLayout> DatabaseLayout(const Config& cfg) {
  return PgShardLedger(cfg.database_url).ReadLayout();
}

std::string FormatOptionalTime(const std::optional<EpochMs>& t) { return t ? FormatIsoTime(*t) : "-"; }

}  // namespace belfry
