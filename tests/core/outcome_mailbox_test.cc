#include "core/outcome_mailbox.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

namespace belfry {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

std::string Outcome(int partition, int64_t offset, const char* status = "applied") {
  return std::string(R"({"id":"job-1","status":")") + status + R"(","partition":)" + std::to_string(partition) +
         R"(,"offset":)" + std::to_string(offset) + "}";
}

TEST(OutcomeMailboxTest, AnOutcomeThatArrivesBeforeItsRequestWaitsIsHeldForIt) {
  OutcomeMailbox box;
  box.Expect("job-1");
  box.Offer("job-1", Outcome(3, 41));
  EXPECT_EQ(box.held(), 1u);
  EXPECT_EQ(box.Await("job-1", 3, 41, steady_clock::now()), Outcome(3, 41));
  EXPECT_EQ(box.held(), 0u);
  box.Forget("job-1");
  EXPECT_EQ(box.expected_keys(), 0u);
}

TEST(OutcomeMailboxTest, AWaitingRequestIsWokenByItsOutcomeFromTheReadersThread) {
  OutcomeMailbox box;
  box.Expect("job-1");
  std::thread reader([&] {
    std::this_thread::sleep_for(milliseconds(50));
    box.Offer("job-1", Outcome(0, 7));
  });
  EXPECT_EQ(box.Await("job-1", 0, 7, steady_clock::now() + std::chrono::seconds(20)), Outcome(0, 7));
  reader.join();
}

TEST(OutcomeMailboxTest, RecordsNobodyExpectsAreNotKept) {
  OutcomeMailbox box;
  box.Offer("job-2", Outcome(0, 1));
  box.Expect("job-1");
  box.Offer("job-2", Outcome(0, 2));
  box.Offer("job-1", "not json");
  box.Offer("job-1", R"({"id":"job-1","status":"applied"})");  // no position
  EXPECT_EQ(box.held(), 0u);
  EXPECT_EQ(box.Await("job-1", 0, 2, steady_clock::now() + milliseconds(20)), std::nullopt);
}

// Two requests for the same job each get the outcome of their own command.
TEST(OutcomeMailboxTest, TwoRequestsForOneKeyGetTheOutcomesOfTheirOwnPositions) {
  OutcomeMailbox box;
  box.Expect("job-1");
  box.Expect("job-1");
  box.Offer("job-1", Outcome(1, 10, "applied"));
  box.Offer("job-1", Outcome(1, 11, "rejected"));
  EXPECT_EQ(box.Await("job-1", 1, 11, steady_clock::now()), Outcome(1, 11, "rejected"));
  box.Forget("job-1");
  EXPECT_EQ(box.held(), 1u);  // the other request still expects the key
  EXPECT_EQ(box.Await("job-1", 1, 10, steady_clock::now()), Outcome(1, 10, "applied"));
  box.Forget("job-1");
  EXPECT_EQ(box.expected_keys(), 0u);
}

TEST(OutcomeMailboxTest, ForgettingTheLastExpectationDropsWhatWasHeldForTheKey) {
  OutcomeMailbox box;
  box.Expect("job-1");
  box.Offer("job-1", Outcome(0, 5));  // its request timed out before taking it
  box.Forget("job-1");
  EXPECT_EQ(box.held(), 0u);
  box.Offer("job-1", Outcome(0, 6));
  EXPECT_EQ(box.held(), 0u);
}

TEST(OutcomeMailboxTest, OverTheBoundTheOldestHeldOutcomeIsDropped) {
  OutcomeMailbox box(/*max_held=*/2);
  box.Expect("job-1");
  box.Offer("job-1", Outcome(0, 1));
  box.Offer("job-1", Outcome(0, 2));
  box.Offer("job-1", Outcome(0, 3));
  EXPECT_EQ(box.held(), 2u);
  EXPECT_EQ(box.Await("job-1", 0, 1, steady_clock::now()), std::nullopt);
  EXPECT_EQ(box.Await("job-1", 0, 3, steady_clock::now()), Outcome(0, 3));
}

}  // namespace
}  // namespace belfry
