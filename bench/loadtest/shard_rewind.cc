#include "loadtest/shard_rewind.h"

#include <fmt/format.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/slot_math.h"
#include "loadtest/live_topic_reader.h"

namespace belfry::loadtest {

void WaitForNoLiveLeases(PgConnection& conn, int64_t wait_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (true) {
    const int64_t claimed = std::stoll(
        conn.ExecScalar("SELECT count(*) FROM shard_state WHERE claim_until > now() OR debt_until > now()"));
    if (claimed == 0) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      throw std::runtime_error(
          fmt::format("{} shards are claimed by a live belfry node: stop every belfry node first", claimed));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

Rewind RewindShards(PgConnection& conn, int32_t minutes) {
  Rewind r;
  const int64_t current_minute = EpochMinuteOf(WallClockMs());
  r.fired_through = current_minute - 1 - minutes;
  const PgRows updated = conn.ExecParams(
      "WITH r AS (UPDATE shard_state SET fired_through = $1::bigint, debt = '{}', debt_node = NULL,"
      " debt_until = NULL, updated_at = now() RETURNING 1) "
      "SELECT count(*) FROM r",
      {std::to_string(r.fired_through)});
  r.shards = std::stoll(updated[0][0]);
  r.first_slot_ms = (current_minute - minutes) * kMsPerMinute;
  r.cut_ms = WallClockMs();
  return r;
}

int64_t CatchUpDebtMinutes(PgConnection& conn) {
  return std::stoll(
      conn.ExecScalar("SELECT coalesce(sum(upper(r) - lower(r)), 0) FROM shard_state, unnest(debt) AS r"));
}

}  // namespace belfry::loadtest
