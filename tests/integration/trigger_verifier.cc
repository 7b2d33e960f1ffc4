#include "trigger_verifier.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafkacpp.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/slot_math.h"
#include "message_dump.h"

namespace belfry {
namespace {

constexpr int64_t kTickMs = 500;

std::optional<int64_t> ParseInt64(const std::string& s) {
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

LatenessStats ComputeLateness(std::vector<int64_t>* values) {
  LatenessStats s;
  if (values->empty()) return s;
  std::sort(values->begin(), values->end());
  const size_t n = values->size();
  s.count = static_cast<int64_t>(n);
  s.p50_ms = (*values)[(n - 1) / 2];
  s.p99_ms = (*values)[std::min(n - 1, static_cast<size_t>(static_cast<double>(n) * 0.99))];
  s.max_ms = values->back();
  return s;
}

std::string VerifyReport::Summary(const std::string& scenario) const {
  std::ostringstream out;
  out << "[verify] " << scenario << ": expected=" << expected << " received=" << received
      << " missing=" << missing << " duplicates=" << duplicates << " (in " << duplicate_shard_minutes
      << " shard-minutes, unexplained " << unexplained_duplicates << ") unexpected=" << unexpected
      << " lateness_ms p50/p99/max=" << lateness.p50_ms << "/" << lateness.p99_ms << "/" << lateness.max_ms
      << " visible_ms p50/p99/max=" << visible.p50_ms << "/" << visible.p99_ms << "/" << visible.max_ms;
  auto list = [&](const char* what, const std::vector<std::string>& v) {
    if (v.empty()) return;
    out << "\n  " << what << ":";
    for (const std::string& e : v) out << " " << e;
  };
  list("missing e.g.", missing_examples);
  list("duplicated e.g.", duplicate_examples);
  list("unexpected e.g.", unexpected_examples);
  return out.str();
}

void VerifyReport::Record(const std::string& prefix) const {
  ::testing::Test::RecordProperty(prefix + "_expected", std::to_string(expected));
  ::testing::Test::RecordProperty(prefix + "_missing", std::to_string(missing));
  ::testing::Test::RecordProperty(prefix + "_duplicates", std::to_string(duplicates));
  ::testing::Test::RecordProperty(prefix + "_duplicate_shard_minutes",
                                  std::to_string(duplicate_shard_minutes));
  ::testing::Test::RecordProperty(prefix + "_unexpected", std::to_string(unexpected));
  ::testing::Test::RecordProperty(prefix + "_lateness_p50_ms", std::to_string(lateness.p50_ms));
  ::testing::Test::RecordProperty(prefix + "_lateness_p99_ms", std::to_string(lateness.p99_ms));
  ::testing::Test::RecordProperty(prefix + "_lateness_max_ms", std::to_string(lateness.max_ms));
  ::testing::Test::RecordProperty(prefix + "_visible_p99_ms", std::to_string(visible.p99_ms));
  ::testing::Test::RecordProperty(prefix + "_visible_max_ms", std::to_string(visible.max_ms));
}

TriggerVerifier::TriggerVerifier(const std::string& brokers, std::vector<std::string> topics)
    : unassigned_topics_(std::move(topics)) {
  std::string err;
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  conf->set("bootstrap.servers", brokers, err);
  conf->set("client.id", "itest-verifier", err);
  // Required by the client; never joined (partitions are assigned, offsets never committed).
  conf->set("group.id", "itest-verifier-" + std::to_string(reinterpret_cast<uintptr_t>(this)), err);
  conf->set("enable.auto.commit", "false", err);
  conf->set("enable.partition.eof", "false", err);
  conf->set("fetch.wait.max.ms", "100", err);
  conf->set("log_level", "3", err);  // a broker outage is expected; keep the test log short
  consumer_.reset(RdKafka::KafkaConsumer::create(conf.get(), err));
  if (!consumer_) {
    ADD_FAILURE() << "verifier consumer: " << err;
    return;
  }
  thread_ = std::thread([this] { Run(); });
}

TriggerVerifier::~TriggerVerifier() {
  stop_.Request();
  if (thread_.joinable()) thread_.join();
  if (consumer_) consumer_->close();
}

void TriggerVerifier::AssignNewTopics() {
  std::vector<std::string> still;
  for (const std::string& topic : unassigned_topics_) {
    std::string err;
    std::unique_ptr<RdKafka::Topic> handle(RdKafka::Topic::create(consumer_.get(), topic, nullptr, err));
    RdKafka::Metadata* raw = nullptr;
    const RdKafka::ErrorCode code = consumer_->metadata(false, handle.get(), &raw, 2000);
    std::unique_ptr<RdKafka::Metadata> md(raw);
    std::vector<RdKafka::TopicPartition*> parts;
    if (code == RdKafka::ERR_NO_ERROR && md) {
      for (const RdKafka::TopicMetadata* t : *md->topics()) {
        if (t->topic() != topic || t->err() != RdKafka::ERR_NO_ERROR) continue;
        for (const RdKafka::PartitionMetadata* p : *t->partitions()) {
          parts.push_back(RdKafka::TopicPartition::create(topic, p->id(), RdKafka::Topic::OFFSET_BEGINNING));
        }
      }
    }
    if (parts.empty()) {
      still.push_back(topic);  // not created yet (the first trigger creates it)
      continue;
    }
    std::unique_ptr<RdKafka::Error> e(consumer_->incremental_assign(parts));
    if (e) {
      still.push_back(topic);
    }
    RdKafka::TopicPartition::destroy(parts);
  }
  unassigned_topics_ = std::move(still);
}

void TriggerVerifier::Run() {
  auto next_lookup = std::chrono::steady_clock::now();
  while (!stop_.requested()) {
    if (!unassigned_topics_.empty() && std::chrono::steady_clock::now() >= next_lookup) {
      AssignNewTopics();
      next_lookup = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    }
    std::unique_ptr<RdKafka::Message> m(consumer_->consume(100));
    if (m->err() == RdKafka::ERR_NO_ERROR) OnMessage(*m);
  }
}

void TriggerVerifier::OnMessage(RdKafka::Message& m) {
  const EpochMs received = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  std::string position =
      m.topic_name() + "/" + std::to_string(m.partition()) + "/" + std::to_string(m.offset());
  std::optional<std::string> job_id;
  std::optional<int64_t> scheduled_for;
  std::map<std::string, std::string> dumped_headers;
  if (RdKafka::Headers* headers = m.headers(); headers != nullptr) {
    for (const RdKafka::Headers::Header& h : headers->get_all()) {
      if (h.value() == nullptr) continue;
      const std::string value(static_cast<const char*>(h.value()), h.value_size());
      dumped_headers[h.key()] = value;
      if (h.key() == "belfry-job-id") job_id = value;
      if (h.key() == "belfry-scheduled-for") scheduled_for = ParseInt64(value);
    }
  }
  DumpConsumedRecord("trigger", m.topic_name(),
                     m.key() != nullptr ? std::optional<std::string>(*m.key()) : std::nullopt,
                     m.payload() != nullptr
                         ? std::optional<std::string>(std::string(static_cast<const char*>(m.payload()), m.len()))
                         : std::nullopt,
                     dumped_headers);
  const EpochMs timestamp = m.timestamp().timestamp;
  std::lock_guard<std::mutex> lock(mu_);
  if (!positions_.insert(std::move(position)).second) {
    ++rereads_;
    return;
  }
  if (!job_id || !scheduled_for) {
    ++malformed_;
    return;
  }
  auto [it, inserted] = job_index_.emplace(*job_id, static_cast<uint32_t>(job_names_.size()));
  if (inserted) job_names_.push_back(*job_id);
  records_.push_back(Rec{it->second, *scheduled_for, timestamp, received});
}

size_t TriggerVerifier::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_.size();
}

size_t TriggerVerifier::malformed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return malformed_;
}

size_t TriggerVerifier::rereads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rereads_;
}

VerifyReport TriggerVerifier::Check(const std::vector<ExpectedJob>& jobs, EpochMs from_ms, EpochMs to_ms,
                                    const std::vector<FaultWindow>& faults) const {
  // Received copies per (job name, slot), for slots in the window: (create time, receive time)
  // of each copy.
  std::unordered_map<std::string, std::map<EpochMs, std::vector<std::pair<EpochMs, EpochMs>>>> got;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Rec& r : records_) {
      if (r.scheduled_for < from_ms || r.scheduled_for >= to_ms) continue;
      got[job_names_[r.job]][r.scheduled_for].push_back({r.timestamp_ms, r.received_ms});
    }
  }
  VerifyReport rep;
  std::vector<int64_t> lateness, visible;
  std::set<std::pair<int32_t, EpochMs>> dup_shard_minutes;
  auto explained = [&](EpochMs slot) {
    return std::any_of(faults.begin(), faults.end(),
                       [&](const FaultWindow& f) { return slot >= f.from_ms && slot <= f.to_ms; });
  };
  auto example = [](std::vector<std::string>* v, const std::string& id, EpochMs slot, size_t n = 0) {
    if (v->size() >= 10) return;
    std::string e = id;
    e += '@';
    e += std::to_string(slot);
    if (n > 1) {
      e += 'x';
      e += std::to_string(n);
    }
    v->push_back(std::move(e));
  };
  std::unordered_set<std::string> known;
  for (const ExpectedJob& job : jobs) {
    known.insert(job.id);
    auto git = got.find(job.id);
    const std::map<EpochMs, std::vector<std::pair<EpochMs, EpochMs>>>* copies =
        git == got.end() ? nullptr : &git->second;
    std::set<EpochMs> due;
    for (int64_t m = EpochMinuteOf(from_ms) - 1; m <= EpochMinuteOf(to_ms) + 1; ++m) {
      const EpochMs slot = SlotMs(m, job.shard, kTickMs);
      if (slot < from_ms || slot >= to_ms) continue;
      if (!IsDueInMinute(job.interval_minutes, job.offset_minutes, m)) continue;
      due.insert(slot);
      ++rep.expected;
      const std::vector<std::pair<EpochMs, EpochMs>>* c = nullptr;
      if (copies != nullptr) {
        auto cit = copies->find(slot);
        if (cit != copies->end()) c = &cit->second;
      }
      if (c == nullptr || c->empty()) {
        ++rep.missing;
        example(&rep.missing_examples, job.id, slot);
        continue;
      }
      rep.received += static_cast<int64_t>(c->size());
      EpochMs first_created = c->front().first, first_received = c->front().second;
      for (const auto& [created, received] : *c) {
        first_created = std::min(first_created, created);
        first_received = std::min(first_received, received);
      }
      lateness.push_back(first_created - slot);
      visible.push_back(first_received - slot);
      if (c->size() > 1) {
        const int64_t extra = static_cast<int64_t>(c->size()) - 1;
        rep.duplicates += extra;
        dup_shard_minutes.insert({job.shard, slot});
        if (!explained(slot)) rep.unexplained_duplicates += extra;
        example(&rep.duplicate_examples, job.id, slot, c->size());
      }
    }
    if (copies != nullptr) {
      for (const auto& [slot, c] : *copies) {
        if (due.count(slot) == 0) {
          rep.unexpected += static_cast<int64_t>(c.size());
          example(&rep.unexpected_examples, job.id, slot, c.size());
        }
      }
    }
  }
  for (const auto& [id, copies] : got) {
    if (known.count(id)) continue;
    for (const auto& [slot, c] : copies) {
      rep.unexpected += static_cast<int64_t>(c.size());
      example(&rep.unexpected_examples, id, slot, c.size());
    }
  }
  rep.duplicate_shard_minutes = static_cast<int64_t>(dup_shard_minutes.size());
  rep.lateness = ComputeLateness(&lateness);
  rep.visible = ComputeLateness(&visible);
  return rep;
}

VerifyReport TriggerVerifier::WaitComplete(const std::vector<ExpectedJob>& jobs, EpochMs from_ms,
                                           EpochMs to_ms, int64_t timeout_ms,
                                           const std::vector<FaultWindow>& faults) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    VerifyReport rep = Check(jobs, from_ms, to_ms, faults);
    if (rep.missing == 0 || std::chrono::steady_clock::now() >= deadline) return rep;
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  }
}

std::map<std::string, std::vector<Arrival>> TriggerVerifier::ArrivalsByJob() const {
  std::map<std::string, std::vector<Arrival>> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Rec& r : records_) {
      out[job_names_[r.job]].push_back(Arrival{r.scheduled_for, r.timestamp_ms, r.received_ms});
    }
  }
  for (auto& [id, v] : out) {
    std::sort(v.begin(), v.end(), [](const Arrival& a, const Arrival& b) {
      return a.scheduled_for != b.scheduled_for ? a.scheduled_for < b.scheduled_for
                                                : a.timestamp_ms < b.timestamp_ms;
    });
  }
  return out;
}

}  // namespace belfry
