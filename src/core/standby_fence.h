// Standby fence: whether a read that must see every write up to a position of the primary's
// write-ahead log (a "fence", taken when the shard-minute was claimed) may run on a hot standby
// that has replayed up to some position (docs/hot-standby.md). Plain values, no I/O: the caller
// reads the positions and does the waiting.
#pragma once

#include <cstdint>

namespace belfry {

enum class StandbyVerdict {
  kRead,      // the standby has replayed past the fence: read there
  kWait,      // not yet: ask it again after a short pause
  kFallBack,  // it lags beyond the bound: read from the primary
};

struct StandbyFenceRule {
  int64_t max_wait_ms = 50;     // the longest a read waits for the standby to reach its fence
  int64_t lagging_wait_ms = 5;  // the same while the standby is lagging (capped by max_wait_ms)
};

// `fence` and `replayed` are log positions (bytes since 0/0). `waited_ms` is how long this read
// has waited so far. `lagging` is true when the previous read fell back for lag: then the
// standby gets only rule.lagging_wait_ms, so that a standby that stays behind costs each tick a
// few milliseconds and not max_wait_ms. That short wait still covers the usual replication
// delay (the fence includes the commits of firings that ended a moment before the claim), so the
// first read that finds the standby caught up ends the spell.
// REQUIRES: fence > 0.
StandbyVerdict JudgeStandby(int64_t fence, int64_t replayed, int64_t waited_ms, bool lagging,
                            const StandbyFenceRule& rule);

// Where one due query was read, and why.
struct DueQueryRoute {
  enum class Server { kPrimary, kStandby };
  enum class Reason {
    kNone,         // read on the standby as planned
    kNoFence,      // the query carried no read fence (primary)
    kBehind,       // the standby had not replayed the fence within max_wait_ms (primary)
    kUnavailable,  // the standby could not be reached, or failed recently (primary)
    kFailed,       // the query failed on the standby (primary when no row had been handed on)
  };
  Server server = Server::kPrimary;
  Reason reason = Reason::kNone;
  int64_t lag_bytes = 0;  // fence - replayed when the standby was asked, or 0
  int64_t waited_ms = 0;  // time spent waiting for the standby to reach the fence
};

const char* DueQueryServerName(DueQueryRoute::Server server);
const char* DueQueryReasonName(DueQueryRoute::Reason reason);

}  // namespace belfry
