#include "loadtest/churn_driver.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "loadtest/kafka_admin.h"
#include "loadtest/weight_list.h"

namespace belfry::loadtest {
namespace {

constexpr const char* kOpNames[6] = {"create", "update-offset", "update-interval",
                                     "pause",  "resume",        "delete"};

}  // namespace

ChurnMix ChurnMix::Parse(const std::string& text) {
  ChurnMix m{0, 0, 0, 0, 0, 0};
  double* fields[6] = {&m.create, &m.update_offset, &m.update_interval, &m.pause, &m.resume, &m.remove};
  const std::vector<std::string> names(std::begin(kOpNames), std::end(kOpNames));
  for (const NamedWeight& w : ParseWeightList(text, "--churn-mix", names)) {
    *fields[std::find(names.begin(), names.end(), w.name) - names.begin()] = w.weight;
  }
  if (!(m.create + m.update_offset + m.update_interval + m.pause + m.resume + m.remove > 0))
    throw std::invalid_argument("--churn-mix: every weight is 0");
  return m;
}

std::string ChurnMix::ToString() const {
  return fmt::format("create:{},update-offset:{},update-interval:{},pause:{},resume:{},delete:{}", create,
                     update_offset, update_interval, pause, resume, remove);
}

ChurnDriver::ChurnDriver(const CommonOptions& common, const ChurnOptions& options,
                         const std::string& topic_prefix, const TriggerExpectations& loaded,
                         ChurnExpectations* churn, WindowReport* report, EpochMs start_ms, EpochMs stop_ms)
    : options_(options),
      mix_(ChurnMix::Parse(options.mix)),
      intervals_(IntervalMix::Parse(options.intervals)),
      commands_topic_(common.commands_topic),
      churn_(churn),
      report_(report),
      start_ms_(start_ms),
      stop_ms_(stop_ms),
      loaded_([&] {
        JobCommandSpec spec;
        spec.id_prefix = options.id_prefix;
        spec.topic_prefix = topic_prefix;
        spec.topics = options.topics > 0 ? options.topics
                                         : std::max<int32_t>(1, static_cast<int32_t>(loaded.topics().size()));
        spec.details_bytes = options.details_bytes;
        spec.mix = intervals_;
        return spec;
      }()),
      created_([&] {
        JobCommandSpec spec = loaded_.spec();
        // A prefix of its own per run, so a create never meets a job of an earlier run.
        spec.id_prefix = fmt::format("{}c{}-", options.id_prefix, (start_ms / 1000) % 1'000'000);
        return spec;
      }()),
      rng_(options.seed) {
  loaded.ForEachIntervalJob([&](std::string_view id, bool paused) {
    uint64_t n = 0;
    if (!loaded_.NumberOf(id, &n)) return;
    (paused ? paused_ : live_).push_back(Target{n, false});
    ++loaded_targets_;
  });
  EnsureTopics(common.brokers, loaded_.Topics(), options.partitions);
  results_ = std::make_unique<LiveTopicReader>(LiveTopicReaderOptions{
      common.brokers, "^" + RegexEscape(common.results_topic) + "$", {}, "belfry-loadtest-churn-results"});
  ProducerSettings settings;
  settings.brokers = common.brokers;
  settings.client_id = "belfry-loadtest-churn";
  settings.overrides = common.kafka_properties;
  producer_ = std::make_unique<LoadtestProducer>(settings, [this](const Delivery& d) {
    Delivery copy = d;
    copy.error = {};
    std::lock_guard<std::mutex> lock(deliveries_mu_);
    deliveries_.push_back(copy);
  });
}

ChurnDriver::~ChurnDriver() = default;

ChurnDriver::Target ChurnDriver::TakeRandom(std::vector<Target>* pool) {
  const size_t i = rng_() % pool->size();
  const Target t = (*pool)[i];
  (*pool)[i] = pool->back();
  pool->pop_back();
  return t;
}

void ChurnDriver::SendOne(EpochMs now) {
  const double total =
      mix_.create + mix_.update_offset + mix_.update_interval + mix_.pause + mix_.resume + mix_.remove;
  double r = std::uniform_real_distribution<double>(0, total)(rng_);
  int op = 0;
  for (const double w : {mix_.create, mix_.update_offset, mix_.update_interval, mix_.pause, mix_.resume}) {
    if (r < w) break;
    r -= w;
    ++op;
  }
  // An op without a target becomes the nearest one that has one.
  if (op == 4 && paused_.empty()) op = 3;
  if ((op == 1 || op == 2) && live_.empty() && paused_.empty()) op = 0;
  if ((op == 3 || op == 5) && live_.empty()) op = paused_.empty() ? 0 : (op == 3 ? 4 : 5);

  Target t;
  int32_t interval = 0;
  int32_t offset = 0;
  switch (op) {
    case 0:
      t = Target{next_created_++, true};
      interval = intervals_.Pick(rng_);
      offset = static_cast<int32_t>(rng_() % static_cast<uint64_t>(interval));
      live_.push_back(t);
      break;
    case 1:
    case 2: {
      const size_t i = rng_() % (live_.size() + paused_.size());
      t = i < live_.size() ? live_[i] : paused_[i - live_.size()];
      const IntervalSchedule current = churn_->Latest(FactoryOf(t).Id(t.n));
      interval = current.interval_minutes;
      if (op == 1 && interval == 1) op = 2;  // a 1-minute job has no other offset
      if (op == 1) {
        offset =
            static_cast<int32_t>((current.offset_minutes + 1 + rng_() % static_cast<uint64_t>(interval - 1)) %
                                 static_cast<uint64_t>(interval));
      } else {
        for (int attempt = 0; attempt < 8 && interval == current.interval_minutes; ++attempt)
          interval = intervals_.Pick(rng_);
        offset = static_cast<int32_t>(rng_() % static_cast<uint64_t>(interval));
      }
      break;
    }
    case 3:
      t = TakeRandom(&live_);
      paused_.push_back(t);
      break;
    case 4:
      t = TakeRandom(&paused_);
      live_.push_back(t);
      break;
    default:
      t = TakeRandom(live_.empty() ? &paused_ : &live_);
      break;
  }
  const JobCommandFactory& factory = FactoryOf(t);
  const std::string id = factory.Id(t.n);
  static constexpr ChurnOp kOps[6] = {ChurnOp::kCreate, ChurnOp::kUpdateOffset, ChurnOp::kUpdateInterval,
                                      ChurnOp::kPause,  ChurnOp::kResume,       ChurnOp::kDelete};
  std::string value;
  switch (op) {
    case 0:
    case 1:
    case 2:
      value = factory.UpsertInterval(t.n, interval, offset, static_cast<uint64_t>(sent_) + 1, rng_);
      break;
    case 3:
      value = factory.Pause(t.n);
      break;
    case 4:
      value = factory.Resume(t.n);
      break;
    default:
      value = factory.Delete(t.n);
      break;
  }
  // Entered before it is produced: no trigger can reflect it before it is known here.
  const ChurnExpectations::VersionHandle version = churn_->AddCommand(id, kOps[op], interval, offset, now);
  const uint64_t sequence = static_cast<uint64_t>(sent_++);
  ++sent_by_op_[op];
  unsent_.emplace(sequence, PendingCommand{version});
  report_->AddCommandSent(now);
  const std::string sent_text = std::to_string(now);
  producer_->Produce(commands_topic_, id, value, {{"belfry-loadtest-sent-ms", sent_text}}, sequence);
}

void ChurnDriver::Resolve(ChurnExpectations::VersionHandle version, bool applied, EpochMs received_ms,
                          std::string_view record) {
  if (applied) {
    churn_->SetApplied(version, received_ms);
    const EpochMs sent = churn_->SentMs(version);
    command_to_applied_.Record(received_ms - sent);
    report_->AddCommandApplied(sent, received_ms - sent);
    ++applied_;
  } else {
    churn_->SetRejected(version);
    if (rejected_++ == 0) first_rejection_ = std::string(record);
  }
}

void ChurnDriver::MatchDeliveries() {
  std::vector<Delivery> batch;
  {
    std::lock_guard<std::mutex> lock(deliveries_mu_);
    batch.swap(deliveries_);
  }
  for (const Delivery& d : batch) {
    const auto it = unsent_.find(d.opaque);
    if (it == unsent_.end()) continue;
    const ChurnExpectations::VersionHandle version = it->second.version;
    unsent_.erase(it);
    if (!d.ok) {
      ++failed_deliveries_;
      churn_->SetRejected(version);  // never reached belfry: the job keeps its schedule
      continue;
    }
    const uint64_t position = CommandPositionKey(d.partition, d.offset);
    const auto early = early_outcomes_.find(position);
    if (early != early_outcomes_.end()) {
      Resolve(version, early->second.applied, early->second.received_ms, early->second.record);
      early_outcomes_.erase(early);
    } else {
      awaiting_outcome_.emplace(position, version);
    }
  }
}

void ChurnDriver::OnOutcome(uint64_t position, bool applied, EpochMs received_ms, std::string_view record) {
  const auto it = awaiting_outcome_.find(position);
  if (it != awaiting_outcome_.end()) {
    Resolve(it->second, applied, received_ms, record);
    awaiting_outcome_.erase(it);
    return;
  }
  // Before its delivery report; a repeated outcome of a resolved command is ignored by emplace.
  early_outcomes_.emplace(position, EarlyOutcome{applied, received_ms, applied ? "" : std::string(record)});
}

void ChurnDriver::ReadOutcomes(int64_t wait_ms) {
  results_->Poll(wait_ms, [&](const LiveRecord& r) {
    CommandOutcomeView o;
    uint64_t n = 0;
    if (r.null_value || !parser_.Parse(r.value, &o)) return;
    if (!loaded_.NumberOf(o.id, &n) && !created_.NumberOf(o.id, &n)) return;
    OnOutcome(CommandPositionKey(o.partition, o.offset), o.applied, r.received_ms, r.value);
  });
}

void ChurnDriver::Pump(EpochMs now) {
  MatchDeliveries();
  ReadOutcomes(1);
  MatchDeliveries();
  if (options_.per_minute <= 0) return;
  const EpochMs until = std::min(now, stop_ms_);
  const int64_t due =
      until < start_ms_
          ? 0
          : static_cast<int64_t>(static_cast<double>(until - start_ms_) * options_.per_minute / 60'000.0) + 1;
  while (sent_ < due) SendOne(WallClockMs());
}

void ChurnDriver::Settle(int64_t timeout_ms) {
  const EpochMs deadline = WallClockMs() + timeout_ms;
  producer_->Flush(static_cast<int>(timeout_ms));
  while (WallClockMs() < deadline) {
    MatchDeliveries();
    if (churn_->pending_outcomes() == 0) break;
    ReadOutcomes(100);
  }
  MatchDeliveries();
}

int64_t ChurnDriver::failed_deliveries() const { return failed_deliveries_; }

nlohmann::ordered_json ChurnDriver::Json() const {
  nlohmann::ordered_json j;
  j["rate_per_min"] = options_.per_minute;
  j["mix"] = mix_.ToString();
  j["intervals"] = intervals_.ToString();
  j["margin_ms"] = churn_->margin_ms();
  j["loaded_targets"] = loaded_targets_;
  j["created_id_prefix"] = created_.spec().id_prefix;
  j["sent"] = sent_;
  nlohmann::ordered_json by_op;
  for (int i = 0; i < 6; ++i) by_op[kOpNames[i]] = sent_by_op_[i];
  j["sent_by_op"] = by_op;
  j["applied"] = applied_;
  j["rejected"] = rejected_;
  if (!first_rejection_.empty()) j["first_rejection"] = first_rejection_;
  j["failed_deliveries"] = failed_deliveries_;
  j["outcomes_missing_at_end"] = churn_->pending_outcomes();
  j["command_to_applied"] = command_to_applied_.Summary();
  j["jobs_changed"] = churn_->tracked_jobs();
  j["live_targets_at_end"] = live_.size();
  j["paused_targets_at_end"] = paused_.size();
  return j;
}

}  // namespace belfry::loadtest
