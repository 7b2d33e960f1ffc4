// OutcomeMailbox: hands the command outcomes read from the results topic to the HTTP requests
// that published those commands (POST /v1/commands, docs/console.md). A request Expects its
// command's key before it publishes, Awaits the outcome of the record it published (its partition
// and offset, from the delivery report), and Forgets the key when it is done. One reader Offers
// every record of the results topic; the mailbox keeps only those whose key some request expects,
// so an outcome that arrives before its request Awaits is not lost, and nothing else is held.
// Outcomes are matched by the command's position, which every outcome carries ("partition",
// "offset"), not by its key alone: two requests for the same job each get their own.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace belfry {

// Thread-safe.
class OutcomeMailbox final {
 public:
  // At most `max_held` outcomes are kept for expected keys that no Await has taken; beyond that
  // the oldest are dropped (their requests answer 202, as on a timeout).
  explicit OutcomeMailbox(size_t max_held = 10'000) : max_held_(max_held) {}
  OutcomeMailbox(const OutcomeMailbox&) = delete;
  OutcomeMailbox& operator=(const OutcomeMailbox&) = delete;

  // Outcomes keyed `key` are kept from now until as many Forget(key) calls.
  void Expect(const std::string& key);
  void Forget(const std::string& key);

  // The reader's side: one results record. Kept iff its key is expected and its value is an
  // object with integer "partition" and "offset" fields; wakes the requests that wait.
  void Offer(std::string_view key, std::string_view value);

  // The outcome of the command published at (partition, offset) under `key`, waiting until
  // `deadline` (steady clock); nullopt when none came by then. REQUIRES: Expect(key) before the
  // command was published, and no Forget(key) for it yet.
  std::optional<std::string> Await(const std::string& key, int32_t partition, int64_t offset,
                                   std::chrono::steady_clock::time_point deadline);

  // Expected keys and held outcomes, for tests and metrics.
  size_t expected_keys() const;
  size_t held() const;

 private:
  using Position = std::pair<int32_t, int64_t>;
  struct Held {
    std::string key;
    std::string outcome;
    uint64_t seq = 0;
  };

  void DropOldestLocked();

  const size_t max_held_;
  mutable std::mutex mu_;
  std::condition_variable arrived_;
  std::map<std::string, int64_t, std::less<>> expected_;  // key -> requests that expect it
  std::map<Position, Held> held_;
  uint64_t next_seq_ = 0;
};

}  // namespace belfry
