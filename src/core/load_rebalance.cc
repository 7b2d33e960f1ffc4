#include "core/load_rebalance.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <tuple>

#include "core/json_writer.h"

namespace belfry {
namespace {

int32_t PeakMinute(const std::vector<int64_t>& load) {
  return static_cast<int32_t>(std::max_element(load.begin(), load.end()) - load.begin());
}

}  // namespace

RebalancePlan PlanRebalance(const std::vector<OffsetLoad>& loads, int64_t max_moves) {
  RebalancePlan plan;
  std::vector<int64_t> load(kMinutesPerDay, 0);
  // Per interval with movable jobs: where each movable job is now. at[o] counts the movable jobs
  // at offset o; came[o][h] how many of them came from offset h (h == o: never moved). A job may
  // move again; only its net move (home -> where it ends) is proposed.
  struct Movable {
    std::vector<int64_t> at;
    std::vector<std::map<int32_t, int64_t>> came;
  };
  std::map<int32_t, Movable> movable;
  for (const OffsetLoad& l : loads) {
    const int32_t i = l.interval_minutes;
    if (i <= 0 || kMinutesPerDay % i != 0 || l.offset_minutes < 0 || l.offset_minutes >= i) continue;
    const int64_t n = l.pinned + l.movable;
    for (int32_t d = l.offset_minutes; d < kMinutesPerDay; d += i) load[static_cast<size_t>(d)] += n;
    plan.jobs += n;
    plan.pinned += l.pinned;
    plan.movable += l.movable;
    if (l.movable > 0 && i > 1) {
      Movable& m = movable[i];
      if (m.at.empty()) {
        m.at.assign(static_cast<size_t>(i), 0);
        m.came.resize(static_cast<size_t>(i));
      }
      m.at[static_cast<size_t>(l.offset_minutes)] += l.movable;
      m.came[static_cast<size_t>(l.offset_minutes)][l.offset_minutes] += l.movable;
    }
  }
  plan.before = load;
  int64_t day_total = 0;
  for (int64_t v : load) day_total += v;
  plan.mean = static_cast<double>(day_total) / kMinutesPerDay;

  // A minute no single move can lower (only pinned jobs, or nowhere lower to go) is left as it is,
  // and the busiest of the others is flattened next.
  std::vector<bool> stuck(kMinutesPerDay, false);
  for (int64_t step = 0; step < max_moves; ++step) {
    int32_t peak_at = -1;
    for (int32_t d = 0; d < kMinutesPerDay; ++d) {
      if (!stuck[static_cast<size_t>(d)] && (peak_at < 0 || load[static_cast<size_t>(d)] > load[static_cast<size_t>(peak_at)]))
        peak_at = d;
    }
    if (peak_at < 0) break;
    const int64_t peak = load[static_cast<size_t>(peak_at)];
    // The best single move off the peak: the one that leaves the lowest max(peak - k, M(o') + k),
    // where M(o') is the busiest minute of the destination offset o'.
    int64_t best_result = peak;
    int32_t best_interval = 0, best_from = 0, best_to = 0;
    int64_t best_k = 0;
    for (auto& [interval, m] : movable) {
      const int32_t from = peak_at % interval;
      const int64_t available = m.at[static_cast<size_t>(from)];
      if (available == 0) continue;
      std::vector<int64_t> busiest(static_cast<size_t>(interval), 0);
      for (int32_t d = 0; d < kMinutesPerDay; ++d) {
        int64_t& b = busiest[static_cast<size_t>(d % interval)];
        b = std::max(b, load[static_cast<size_t>(d)]);
      }
      int32_t to = -1;
      for (int32_t o = 0; o < interval; ++o) {
        if (o == from) continue;
        if (to < 0 || busiest[static_cast<size_t>(o)] < busiest[static_cast<size_t>(to)]) to = o;
      }
      if (to < 0) continue;
      const int64_t k = std::min(available, (peak - busiest[static_cast<size_t>(to)]) / 2);
      if (k <= 0) continue;
      const int64_t result = std::max(peak - k, busiest[static_cast<size_t>(to)] + k);
      if (result < best_result) {
        best_result = result;
        best_interval = interval;
        best_from = from;
        best_to = to;
        best_k = k;
      }
    }
    if (best_k == 0) {  // no move of one interval's movable jobs lowers this minute
      stuck[static_cast<size_t>(peak_at)] = true;
      continue;
    }
    for (int32_t d = best_from; d < kMinutesPerDay; d += best_interval) load[static_cast<size_t>(d)] -= best_k;
    for (int32_t d = best_to; d < kMinutesPerDay; d += best_interval) load[static_cast<size_t>(d)] += best_k;
    Movable& m = movable[best_interval];
    m.at[static_cast<size_t>(best_from)] -= best_k;
    m.at[static_cast<size_t>(best_to)] += best_k;
    // Jobs that arrived here from elsewhere go on first (their home stays their home), then the
    // ones whose home this is.
    std::map<int32_t, int64_t>& here = m.came[static_cast<size_t>(best_from)];
    int64_t left = best_k;
    for (auto it = here.begin(); it != here.end() && left > 0;) {
      if (it->first == best_from) {
        ++it;
        continue;
      }
      const int64_t t = std::min(left, it->second);
      m.came[static_cast<size_t>(best_to)][it->first] += t;
      left -= t;
      it->second -= t;
      it = it->second == 0 ? here.erase(it) : std::next(it);
    }
    if (left > 0) {
      here[best_from] -= left;
      if (here[best_from] == 0) here.erase(best_from);
      m.came[static_cast<size_t>(best_to)][best_from] += left;
    }
  }
  for (const auto& [interval, m] : movable) {
    for (int32_t o = 0; o < interval; ++o) {
      for (const auto& [home, jobs] : m.came[static_cast<size_t>(o)]) {
        if (home == o || jobs == 0) continue;
        plan.moves.push_back(OffsetMove{interval, home, o, jobs, {}});
        plan.jobs_moved += jobs;
      }
    }
  }
  std::sort(plan.moves.begin(), plan.moves.end(), [](const OffsetMove& a, const OffsetMove& b) {
    return std::tie(a.interval_minutes, a.from_offset, a.to_offset) <
           std::tie(b.interval_minutes, b.from_offset, b.to_offset);
  });
  plan.after = load;
  plan.peak_minute_before = PeakMinute(plan.before);
  plan.peak_before = plan.before[static_cast<size_t>(plan.peak_minute_before)];
  plan.peak_minute_after = PeakMinute(plan.after);
  plan.peak_after = plan.after[static_cast<size_t>(plan.peak_minute_after)];
  return plan;
}

StatusOr<RebalancePlan> ProposeRebalance(LoadReader& store, int32_t example_ids) {
  StatusOr<std::vector<OffsetLoad>> loads = store.ReadOffsetLoads();
  if (!loads.ok()) return loads.status();
  RebalancePlan plan = PlanRebalance(*loads);
  if (example_ids <= 0) return plan;
  // One pool of ids per (interval, from offset), sliced among its moves in order.
  for (size_t first = 0; first < plan.moves.size();) {
    size_t last = first;
    while (last < plan.moves.size() && plan.moves[last].interval_minutes == plan.moves[first].interval_minutes &&
           plan.moves[last].from_offset == plan.moves[first].from_offset) {
      ++last;
    }
    const int64_t want = std::min<int64_t>(1000, static_cast<int64_t>(last - first) * example_ids);
    StatusOr<std::vector<std::string>> ids = store.MovableJobIds(
        plan.moves[first].interval_minutes, plan.moves[first].from_offset, static_cast<int32_t>(want));
    if (!ids.ok()) return ids.status();
    size_t next = 0;
    for (size_t i = first; i < last; ++i) {
      OffsetMove& m = plan.moves[i];
      while (next < ids->size() && static_cast<int64_t>(m.example_ids.size()) < std::min<int64_t>(example_ids, m.jobs)) {
        m.example_ids.push_back((*ids)[next++]);
      }
    }
    first = last;
  }
  return plan;
}

std::string EncodeRebalancePlanJson(const RebalancePlan& plan) {
  std::string out;
  const auto num = [&out](int64_t v) { out.append(std::to_string(v)); };
  const auto minute_of_day = [&out](int32_t d) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%02d:%02d", d / 60, d % 60);
    AppendJsonString(&out, buf);
  };
  out.append("{\"dryRun\":true,\"jobs\":");
  num(plan.jobs);
  out.append(",\"pinned\":");
  num(plan.pinned);
  out.append(",\"movable\":");
  num(plan.movable);
  out.append(",\"jobsMoved\":");
  num(plan.jobs_moved);
  out.append(",\"meanPerMinute\":");
  out.append(std::to_string(static_cast<int64_t>(plan.mean + 0.5)));
  out.append(",\"peakBefore\":{\"minuteOfDay\":");
  minute_of_day(plan.peak_minute_before);
  out.append(",\"triggers\":");
  num(plan.peak_before);
  out.append("},\"peakAfter\":{\"minuteOfDay\":");
  minute_of_day(plan.peak_minute_after);
  out.append(",\"triggers\":");
  num(plan.peak_after);
  out.append("},\"moves\":[");
  for (size_t i = 0; i < plan.moves.size(); ++i) {
    const OffsetMove& m = plan.moves[i];
    if (i) out.push_back(',');
    out.append("{\"intervalMinutes\":");
    num(m.interval_minutes);
    out.append(",\"fromOffset\":");
    num(m.from_offset);
    out.append(",\"toOffset\":");
    num(m.to_offset);
    out.append(",\"jobs\":");
    num(m.jobs);
    out.append(",\"exampleIds\":[");
    for (size_t k = 0; k < m.example_ids.size(); ++k) {
      if (k) out.push_back(',');
      AppendJsonString(&out, m.example_ids[k]);
    }
    out.append("]}");
  }
  out.append("]}");
  return out;
}

}  // namespace belfry
