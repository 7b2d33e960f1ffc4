// Hermetic: OrderedMessages keeps per-partition offset order across rewinds.
#include "kafka/ordered_messages.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace belfry {
namespace {

struct FakeMessage {
  std::string topic;
  int32_t part;
  int64_t off;
  std::string topic_name() const { return topic; }
  int32_t partition() const { return part; }
  int64_t offset() const { return off; }
};
using Ptr = std::unique_ptr<FakeMessage>;

Ptr M(int32_t partition, int64_t offset, std::string topic = "t") {
  return std::make_unique<FakeMessage>(FakeMessage{std::move(topic), partition, offset});
}

std::vector<std::string> Positions(std::vector<Ptr> v) {
  std::vector<std::string> out;
  for (const Ptr& m : v) out.push_back(m->topic + std::to_string(m->part) + "@" + std::to_string(m->off));
  return out;
}

TEST(OrderedMessagesTest, KeepsConsumptionOrder) {
  OrderedMessages<Ptr> b;
  b.Append(M(0, 10));
  b.Append(M(1, 5));
  b.Append(M(0, 11));
  EXPECT_EQ(b.size(), 3u);
  EXPECT_EQ(Positions(b.Take()), (std::vector<std::string>{"t0@10", "t1@5", "t0@11"}));
  EXPECT_TRUE(b.empty());
}

TEST(OrderedMessagesTest, RewindDropsTheRedeliveredRangeOfThatPartitionOnly) {
  OrderedMessages<Ptr> b;
  for (int64_t off = 100; off <= 104; ++off) b.Append(M(0, off));
  b.Append(M(1, 7));
  b.Append(M(0, 7, "other"));
  // Partition t0 is re-assigned and resumes from the committed offset 102.
  b.Append(M(0, 102));
  b.Append(M(0, 103));
  EXPECT_EQ(Positions(b.Take()),
            (std::vector<std::string>{"t0@100", "t0@101", "t1@7", "other0@7", "t0@102", "t0@103"}));
}

TEST(OrderedMessagesTest, RewindAfterTakeIsANewBatch) {
  OrderedMessages<Ptr> b;
  b.Append(M(0, 5));
  b.Take();
  b.Append(M(0, 3));
  EXPECT_EQ(Positions(b.Take()), (std::vector<std::string>{"t0@3"}));
}

TEST(OrderedMessagesTest, RetainDropsRevokedPartitions) {
  OrderedMessages<Ptr> b;
  b.Append(M(0, 1));
  b.Append(M(1, 1));
  b.Append(M(0, 2));
  b.Retain([](const OrderedMessages<Ptr>::Key& k) { return k.second == 1; });
  b.Append(M(0, 1));  // not a rewind any more: partition 0 was forgotten
  EXPECT_EQ(Positions(b.Take()), (std::vector<std::string>{"t1@1", "t0@1"}));
}

}  // namespace
}  // namespace belfry
