#include "itest_support.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>
#include <pqxx/connection>
#include <pqxx/nontransaction>
#include <random>
#include <sstream>

#include "belfry_process.h"
#include "message_dump.h"
#include "core/shard_hash.h"
#include "plain_producer.h"
#include "trigger_verifier.h"

namespace belfry {

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void SleepUntilWallMs(int64_t t) {
  const int64_t now = WallMs();
  if (t > now) std::this_thread::sleep_for(std::chrono::milliseconds(t - now));
}

bool WaitFor(const std::function<bool()>& cond, int64_t timeout_ms) {
  const int64_t end = WallMs() + timeout_ms;
  while (true) {
    if (cond()) return true;
    if (WallMs() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::map<std::string, std::string> ItestWorld::Env(const std::string& group) const {
  return {{"BELFRY_DATABASE_URL", db->url()},
          {"BELFRY_KAFKA_BROKERS", brokers},
          {"BELFRY_KAFKA_COMMANDS_TOPIC", commands_topic},
          {"BELFRY_KAFKA_DLQ_TOPIC", dlq_topic},
          {"BELFRY_KAFKA_RESULTS_TOPIC", results_topic},
          {"BELFRY_KAFKA_CHANGES_TOPIC", changes_topic},
          {"BELFRY_KAFKA_TRIGGERS_DLQ_TOPIC", triggers_dlq_topic},
          {"BELFRY_KAFKA_GROUP_ID", "it-" + run_id + (group.empty() ? "" : "-" + group)},
          {"BELFRY_KAFKA_EXECUTIONS_TOPIC", executions_topic},
          {"BELFRY_KAFKA_EXECUTIONS_DLQ_TOPIC", executions_dlq_topic},
          {"BELFRY_KAFKA_EXECUTIONS_GROUP_ID", "it-exec-" + run_id + (group.empty() ? "" : "-" + group)},
          {"BELFRY_ADMIN_LISTEN", "127.0.0.1:0"},
          {"BELFRY_MIGRATIONS_DIR", MigrationsDir()},
          {"BELFRY_LOG_LEVEL", "info"}};
}

std::unique_ptr<ItestWorld> ItestWorld::Create(const std::string& name) {
  auto w = std::make_unique<ItestWorld>();
  std::mt19937_64 rng(std::random_device{}());
  w->run_id = name + "-" + std::to_string(getpid()) + "-" + std::to_string(rng() % 100000);
  const char* brokers = std::getenv("BELFRY_KAFKA_BROKERS");
  if (!brokers) {
    ADD_FAILURE()
        << "BELFRY_KAFKA_BROKERS is not set: run via scripts/test (eval $(scripts/local-stack env))";
    return nullptr;
  }
  w->brokers = brokers;
  std::string error;
  // A clone of the migrated template: `belfry migrate` below then only creates the topics (the
  // schema is current), instead of spending seconds of server CPU on 0005's partitions.
  w->db = PgTestDatabase::CreateMigrated(120, &error);
  if (!w->db) {
    ADD_FAILURE() << "cannot create a test database: " << error;
    return nullptr;
  }
  const std::string t = "it." + w->run_id;
  w->commands_topic = t + ".commands";
  w->dlq_topic = t + ".dlq";
  w->results_topic = t + ".results";
  w->changes_topic = t + ".changes";
  w->trigger_topic = t + ".triggers";
  w->executions_topic = t + ".executions";
  w->executions_dlq_topic = t + ".executions.dlq";
  w->triggers_dlq_topic = t + ".triggers-dlq";
  std::string out;
  const int rc = RunBelfry({"migrate"}, w->Env(), &out);
  if (rc != 0) {
    ADD_FAILURE() << "belfry migrate failed (" << rc << "): " << out;
    return nullptr;
  }
  return w;
}

TopicCollector::TopicCollector(const std::string& brokers, std::vector<std::string> topics) : brokers_(brokers) {
  KafkaConfig cfg;
  cfg.brokers = brokers;
  TopicTailOptions options;
  options.from_beginning = true;
  auto tail = TopicTail::Create(cfg, std::move(topics), options);
  if (!tail.ok()) {
    ADD_FAILURE() << "TopicTail: " << tail.status().ToString();
    return;
  }
  tail_ = std::move(tail.value());
  thread_ = std::thread([this] {
    tail_->Run(stop_, [this](const TailRecord& r) {
      DumpConsumedRecord("", r.topic, r.key, r.value, r.headers);
      std::lock_guard<std::mutex> lock(mu_);
      records_.push_back(r);
    });
  });
}

TopicCollector::~TopicCollector() {
  stop_.Request();
  if (thread_.joinable()) thread_.join();
}

std::vector<TailRecord> TopicCollector::records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_;
}

size_t TopicCollector::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_.size();
}

bool TopicCollector::WaitForEndOf(const std::string& topic, int64_t timeout_ms) const {
  const std::optional<std::map<int32_t, int64_t>> ends = EndOffsets(brokers_, topic);
  if (!ends) return false;
  return WaitFor(
      [&] {
        std::map<int32_t, int64_t> next;  // partition -> offset after the last record collected
        {
          std::lock_guard<std::mutex> lock(mu_);
          for (const TailRecord& r : records_) {
            if (r.topic != topic) continue;
            int64_t& n = next[r.partition];
            n = std::max(n, r.offset + 1);
          }
        }
        for (const auto& [partition, end] : *ends) {
          if (next[partition] < end) return false;
        }
        return true;
      },
      timeout_ms);
}

std::optional<int64_t> ConsumerLag(const std::string& brokers, const std::string& group, const std::string& topic) {
  const std::optional<std::map<int32_t, int64_t>> ends = EndOffsets(brokers, topic);
  if (!ends) return std::nullopt;
  std::string errstr;
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  conf->set("bootstrap.servers", brokers, errstr);
  conf->set("group.id", group, errstr);  // never subscribes: reads the group's offsets only
  conf->set("enable.auto.commit", "false", errstr);
  std::unique_ptr<RdKafka::KafkaConsumer> c(RdKafka::KafkaConsumer::create(conf.get(), errstr));
  if (c == nullptr) return std::nullopt;
  std::vector<RdKafka::TopicPartition*> parts;
  for (const auto& [p, unused] : *ends) parts.push_back(RdKafka::TopicPartition::create(topic, p));
  std::optional<int64_t> out;
  if (c->committed(parts, 10'000) == RdKafka::ERR_NO_ERROR) {
    out = 0;
    for (const RdKafka::TopicPartition* tp : parts) {
      *out += std::max<int64_t>(0, ends->at(tp->partition()) - std::max<int64_t>(0, tp->offset()));
    }
  }
  RdKafka::TopicPartition::destroy(parts);
  c->close();
  return out;
}

bool AwaitLagZero(const std::string& brokers, const std::string& group, const std::string& topic, int64_t timeout_ms) {
  return WaitFor([&] { return ConsumerLag(brokers, group, topic) == std::optional<int64_t>(0); }, timeout_ms);
}

std::optional<std::map<int32_t, int64_t>> EndOffsets(const std::string& brokers, const std::string& topic) {
  constexpr int kTimeoutMs = 10'000;
  std::string errstr;
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  if (conf->set("bootstrap.servers", brokers, errstr) != RdKafka::Conf::CONF_OK) return std::nullopt;
  std::unique_ptr<RdKafka::Producer> producer(RdKafka::Producer::create(conf.get(), errstr));
  if (producer == nullptr) return std::nullopt;
  std::unique_ptr<RdKafka::Topic> handle(RdKafka::Topic::create(producer.get(), topic, nullptr, errstr));
  if (handle == nullptr) return std::nullopt;
  RdKafka::Metadata* raw = nullptr;
  if (producer->metadata(false, handle.get(), &raw, kTimeoutMs) != RdKafka::ERR_NO_ERROR) return std::nullopt;
  const std::unique_ptr<RdKafka::Metadata> metadata(raw);
  std::map<int32_t, int64_t> out;
  for (const RdKafka::TopicMetadata* t : *metadata->topics()) {
    if (t->topic() != topic) continue;
    if (t->err() != RdKafka::ERR_NO_ERROR) return std::nullopt;
    for (const RdKafka::PartitionMetadata* p : *t->partitions()) {
      int64_t low = 0, high = 0;
      if (producer->query_watermark_offsets(topic, p->id(), &low, &high, kTimeoutMs) != RdKafka::ERR_NO_ERROR) {
        return std::nullopt;
      }
      out[p->id()] = high;
    }
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::string DenyTopicWrites(const std::string& brokers, const std::string& topic) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers.c_str(), errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    return errstr;
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));  // owns conf from here
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    return errstr;
  }
  rd_kafka_AclBinding_t* acl = rd_kafka_AclBinding_new(
      RD_KAFKA_RESOURCE_TOPIC, topic.c_str(), RD_KAFKA_RESOURCE_PATTERN_LITERAL, "User:ANONYMOUS", "*",
      RD_KAFKA_ACL_OPERATION_WRITE, RD_KAFKA_ACL_PERMISSION_TYPE_DENY, errstr, sizeof(errstr));
  std::string error = acl == nullptr ? std::string(errstr) : std::string();
  if (acl != nullptr) {
    rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
    rd_kafka_CreateAcls(rk, &acl, 1, nullptr, queue);
    rd_kafka_event_t* ev = rd_kafka_queue_poll(queue, 15'000);
    if (ev == nullptr) {
      error = "CreateAcls timed out";
    } else if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      error = rd_kafka_event_error_string(ev);
    } else {
      size_t n = 0;
      const rd_kafka_acl_result_t** results =
          rd_kafka_CreateAcls_result_acls(rd_kafka_event_CreateAcls_result(ev), &n);
      for (size_t i = 0; i < n; ++i) {
        if (const rd_kafka_error_t* e = rd_kafka_acl_result_error(results[i])) error = rd_kafka_error_string(e);
      }
    }
    if (ev != nullptr) rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(queue);
    rd_kafka_AclBinding_destroy(acl);
  }
  rd_kafka_destroy(rk);
  return error;
}

std::vector<std::string> IdsInShard(const std::string& prefix, int32_t shard, int count) {
  std::vector<std::string> out;
  for (int n = 0; static_cast<int>(out.size()) < count; ++n) {
    std::string id = prefix + "-" + std::to_string(n);
    if (ShardForId(id, 120) == shard) out.push_back(id);
  }
  return out;
}

std::string SourceDir() { return BELFRY_SOURCE_DIR; }

int LocalStack(const std::string& args, std::string* out) {
  const std::string cmd = SourceDir() + "/scripts/local-stack " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  std::string text;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) text.append(buf, n);
  const int status = pclose(p);
  if (out) *out = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::optional<std::string> HttpGet(int port, const std::string& path, int* status) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return std::nullopt;
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return std::nullopt;
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return std::nullopt;
  }
  std::string resp;
  char buf[8192];
  ssize_t n = 0;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) resp.append(buf, static_cast<size_t>(n));
  close(fd);
  const size_t head_end = resp.find("\r\n\r\n");
  if (head_end == std::string::npos) return std::nullopt;
  if (status) {
    *status = 0;
    const size_t sp = resp.find(' ');
    if (sp != std::string::npos) *status = std::atoi(resp.c_str() + sp + 1);
  }
  return resp.substr(head_end + 4);
}

std::optional<double> MetricValue(const std::string& exposition, const std::string& series) {
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      return std::strtod(line.c_str() + series.size() + 1, nullptr);
    }
  }
  return std::nullopt;
}

std::string UpsertCommand(const std::string& id, int interval_minutes, const std::string& topic,
                          const std::string& extra) {
  return R"({"id":")" + id + R"(","intervalMinutes":)" + std::to_string(interval_minutes) + R"(,"topic":")" +
         topic + R"(","owner":"itest","jobDetails":{"n":")" + id + "\"}" + extra + "}";
}

size_t PublishUpserts(PlainProducer& producer, const std::string& commands_topic,
                      const std::vector<std::string>& ids, int interval_minutes, const std::string& topic) {
  std::vector<PlainMessage> messages;
  messages.reserve(ids.size());
  for (const std::string& id : ids)
    messages.push_back(PlainMessage{id, UpsertCommand(id, interval_minutes, topic), {}});
  return CountFailed(producer.SendBatch(commands_topic, messages));
}

std::optional<pqxx::result> QueryFresh(const std::string& url, const std::string& sql) {
  try {
    pqxx::connection conn(url);
    pqxx::nontransaction txn(conn);
    return txn.exec(sql);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

int64_t CountFresh(const std::string& url, const std::string& sql) {
  std::optional<pqxx::result> r = QueryFresh(url, sql);
  if (!r || r->empty()) return -1;
  return (*r)[0][0].as<int64_t>();
}

std::vector<ExpectedJob> LoadJobs(const std::string& url, const std::string& id_prefix,
                                  int64_t* shard_mismatches) {
  std::vector<ExpectedJob> jobs;
  if (shard_mismatches) *shard_mismatches = 0;
  std::optional<pqxx::result> r;
  for (int attempt = 0; attempt < 50 && !r; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    r = QueryFresh(url,
                   "SELECT id, shard, interval_minutes, offset_minutes FROM jobs WHERE starts_with(id, '" +
                       id_prefix + "') ORDER BY id");
  }
  if (!r) {
    ADD_FAILURE() << "cannot read the jobs table";
    return jobs;
  }
  jobs.reserve(r->size());
  for (const pqxx::row& row : *r) {
    ExpectedJob j;
    j.id = row[0].as<std::string>();
    j.shard = ShardForId(j.id, 120);
    j.interval_minutes = row[2].as<int32_t>();
    j.offset_minutes = row[3].as<int32_t>();
    if (shard_mismatches && row[1].as<int32_t>() != j.shard) ++*shard_mismatches;
    jobs.push_back(std::move(j));
  }
  return jobs;
}

std::vector<std::string> MakeIds(const std::string& prefix, int n) {
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out.push_back(prefix + "-" + std::to_string(i));
  return out;
}

std::vector<std::string> MakeIdsPerShard(const std::string& prefix, int per_shard, int32_t shard_count) {
  std::vector<std::string> out;
  std::vector<int> in_shard(static_cast<size_t>(shard_count), 0);
  const size_t want = static_cast<size_t>(per_shard) * static_cast<size_t>(shard_count);
  for (int i = 0; out.size() < want; ++i) {
    std::string id = prefix + "-" + std::to_string(i);
    int& n = in_shard[static_cast<size_t>(ShardForId(id, shard_count))];
    if (n == per_shard) continue;
    ++n;
    out.push_back(std::move(id));
  }
  return out;
}

int64_t ProcessCpuMs(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  // After "pid (comm)": state is field 3; utime and stime are fields 14 and 15.
  std::istringstream fields(stat.substr(paren + 2));
  std::string field;
  int64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  return (utime + stime) * 1000 / sysconf(_SC_CLK_TCK);
}

void Note(const std::string& line) {
  const int64_t now = WallMs();
  const std::time_t secs = static_cast<std::time_t>(now / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[32];
  std::snprintf(stamp, sizeof(stamp), "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(now % 1000));
  std::cout << "[itest " << stamp << "] " << line << std::endl;
}

}  // namespace belfry
