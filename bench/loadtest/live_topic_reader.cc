#include "loadtest/live_topic_reader.h"

#include <fmt/format.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <stdexcept>

namespace belfry::loadtest {
namespace {

constexpr int kQueryTimeoutMs = 10000;

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Set(RdKafka::Conf& conf, const std::string& key, const std::string& value) {
  std::string errstr;
  if (conf.set(key, value, errstr) != RdKafka::Conf::CONF_OK) {
    throw std::runtime_error(fmt::format("librdkafka property {}={}: {}", key, value, errstr));
  }
}

}  // namespace

EpochMs WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string RegexEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (std::string_view(".^$|()[]{}*+?\\").find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

LiveTopicReader::LiveTopicReader(LiveTopicReaderOptions options)
    : options_(std::move(options)), topic_regex_(options_.topic_regex) {
  if (options_.header_names.size() > kMaxReaderHeaders) throw std::invalid_argument("too many header names");
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  Set(*conf, "bootstrap.servers", options_.brokers);
  Set(*conf, "client.id", options_.client_id);
  // Never joins the group (partitions are assigned by hand) and never commits; the id only
  // has to be unique.
  Set(*conf, "group.id", fmt::format("belfry-loadtest-{}-{}", getpid(), std::random_device{}()));
  Set(*conf, "enable.auto.commit", "false");
  Set(*conf, "enable.auto.offset.store", "false");
  Set(*conf, "enable.partition.eof", "false");
  Set(*conf, "fetch.wait.max.ms", "100");
  Set(*conf, "auto.offset.reset", "earliest");
  std::string errstr;
  consumer_.reset(RdKafka::KafkaConsumer::create(conf.get(), errstr));
  if (consumer_ == nullptr) throw std::runtime_error("creating the Kafka consumer: " + errstr);
  AssignNewPartitions(/*initial=*/true);
  started_at_ms_ = WallClockMs();
  next_refresh_ns_ = SteadyNs() + int64_t{options_.metadata_refresh_ms} * 1'000'000;
}

LiveTopicReader::~LiveTopicReader() { consumer_->close(); }

void LiveTopicReader::AssignNewPartitions(bool initial) {
  RdKafka::Metadata* raw = nullptr;
  const RdKafka::ErrorCode err = consumer_->metadata(true, nullptr, &raw, kQueryTimeoutMs);
  if (err != RdKafka::ERR_NO_ERROR) {
    if (initial)
      throw std::runtime_error(
          fmt::format("Kafka metadata from {}: {}", options_.brokers, RdKafka::err2str(err)));
    return;  // try again at the next refresh
  }
  std::unique_ptr<RdKafka::Metadata> md(raw);
  std::vector<RdKafka::TopicPartition*> fresh;
  for (const RdKafka::TopicMetadata* topic : *md->topics()) {
    if (topic->err() != RdKafka::ERR_NO_ERROR || !std::regex_match(topic->topic(), topic_regex_)) continue;
    for (const RdKafka::PartitionMetadata* p : *topic->partitions()) {
      const auto key = std::make_pair(topic->topic(), p->id());
      if (assigned_.count(key) > 0) continue;
      int64_t offset = RdKafka::Topic::OFFSET_BEGINNING;
      if (initial) {
        int64_t low = 0;
        int64_t high = 0;
        const RdKafka::ErrorCode werr =
            consumer_->query_watermark_offsets(topic->topic(), p->id(), &low, &high, kQueryTimeoutMs);
        if (werr != RdKafka::ERR_NO_ERROR) {
          throw std::runtime_error(
              fmt::format("end offset of {}[{}]: {}", topic->topic(), p->id(), RdKafka::err2str(werr)));
        }
        offset = high;
      }
      fresh.push_back(RdKafka::TopicPartition::create(topic->topic(), p->id(), offset));
      assigned_.insert(key);
    }
  }
  if (!fresh.empty()) {
    RdKafka::Error* error = consumer_->incremental_assign(fresh);
    std::string message;
    if (error != nullptr) {
      message = error->str();
      delete error;
    }
    RdKafka::TopicPartition::destroy(fresh);
    if (!message.empty()) throw std::runtime_error("assigning partitions: " + message);
  }
}

size_t LiveTopicReader::Poll(int64_t max_ms, const std::function<void(const LiveRecord&)>& fn) {
  const int64_t deadline = SteadyNs() + max_ms * 1'000'000;
  size_t count = 0;
  LiveRecord record;
  while (true) {
    const int64_t now = SteadyNs();
    if (now >= next_refresh_ns_) {
      AssignNewPartitions(/*initial=*/false);
      next_refresh_ns_ = now + int64_t{options_.metadata_refresh_ms} * 1'000'000;
    }
    if (now >= deadline) return count;
    const int wait_ms = static_cast<int>(std::min<int64_t>(100, (deadline - now) / 1'000'000 + 1));
    std::unique_ptr<RdKafka::Message> msg(consumer_->consume(wait_ms));
    if (msg->err() == RdKafka::ERR__TIMED_OUT) continue;
    if (msg->err() != RdKafka::ERR_NO_ERROR) {
      if (consume_errors_++ < 5) fmt::print(stderr, "reader: {}\n", msg->errstr());
      continue;
    }
    record.received_ms = WallClockMs();
    rd_kafka_message_t* m = msg->c_ptr();
    record.topic = rd_kafka_topic_name(m->rkt);
    record.partition = m->partition;
    rd_kafka_timestamp_type_t timestamp_type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
    const int64_t timestamp = rd_kafka_message_timestamp(m, &timestamp_type);
    record.timestamp_ms = timestamp_type == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? 0 : timestamp;
    record.offset = m->offset;
    record.key = m->key != nullptr ? std::string_view(static_cast<const char*>(m->key), m->key_len)
                                   : std::string_view();
    record.null_value = m->payload == nullptr;
    record.value = m->payload != nullptr ? std::string_view(static_cast<const char*>(m->payload), m->len)
                                         : std::string_view();
    rd_kafka_headers_t* headers = nullptr;
    const bool has_headers = rd_kafka_message_headers(m, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR;
    for (size_t i = 0; i < options_.header_names.size(); ++i) {
      const void* value = nullptr;
      size_t size = 0;
      record.has_header[i] =
          has_headers && rd_kafka_header_get_last(headers, options_.header_names[i].c_str(), &value, &size) ==
                             RD_KAFKA_RESP_ERR_NO_ERROR;
      record.headers[i] = record.has_header[i] && value != nullptr
                              ? std::string_view(static_cast<const char*>(value), size)
                              : std::string_view();
    }
    fn(record);
    ++count;
  }
}

}  // namespace belfry::loadtest
