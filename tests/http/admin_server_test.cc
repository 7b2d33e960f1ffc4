#include "http/admin_server.h"
#include <mutex>
#include "http/console_assets.h"
#include "http/write_token.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <poll.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <thread>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <fmt/format.h>

#include <sstream>
#include <stdexcept>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/calendar_schedule.h"
#include "core/iso_time.h"
#include "core/slot_math.h"
#include "fakes/fake_clock.h"
#include "fakes/fake_job_store.h"
#include "fakes/fake_shard_ledger.h"
#include "http/cached_check.h"
#include "http/connection_gate.h"
#include "tzdb/system_time_zone_database.h"

namespace belfry {

// Defined in metrics_registry_test.cc.
std::string ParseExposition(const std::string& text, std::map<std::string, double>* samples);

namespace {

using Json = nlohmann::json;

// 2026-11-22T13:37:10.250Z
const EpochMs kNow = *ParseIsoTime("2026-11-22T13:37:10.250Z");

// Percent-encodes everything but RFC 3986 unreserved characters.
std::string Encode(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

// One client TCP connection for many HTTP/1.1 requests, written the way a keep-alive client
// writes them: request, then read the whole response, then the next request on the same socket.
class RawConnection {
 public:
  // `source`: the client's address (any of 127.0.0.0/8 reaches the loopback server).
  explicit RawConnection(int port, const char* source = "127.0.0.1", int timeout_ms = 5000) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &from.sin_addr);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof(from));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~RawConnection() { ::close(fd_); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  struct Response {
    int status = 0;  // 0: no complete response
    std::string head;
    std::string body;
  };

  // Sends GET `path` and reads one response (Content-Length framed).
  Response Get(const std::string& path) {
    Response r;
    if (!connected_) return r;
    const std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    if (!Send(req)) return r;
    return Read();
  }

  bool Send(const std::string& bytes) {
    return connected_ && ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }

  // Reads one response (Content-Length framed); status 0 when none came within the timeout.
  Response Read() {
    Response r;
    size_t head_end = std::string::npos;
    size_t length = 0;
    for (;;) {
      if (head_end == std::string::npos) {
        head_end = buf_.find("\r\n\r\n");
        if (head_end != std::string::npos) {
          r.head = buf_.substr(0, head_end + 2);
          const size_t cl = Lower(r.head).find("content-length:");
          length = cl == std::string::npos ? 0 : std::stoul(r.head.substr(cl + 15));
        }
      }
      if (head_end != std::string::npos && buf_.size() >= head_end + 4 + length) break;
      char chunk[16384];
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n <= 0) return r;
      buf_.append(chunk, static_cast<size_t>(n));
    }
    r.body = buf_.substr(head_end + 4, length);
    buf_.erase(0, head_end + 4 + length);
    r.status = std::stoi(r.head.substr(9, 3));
    return r;
  }

  // True once the server has closed its side (recv returns 0) within the receive timeout.
  bool ClosedByServer() {
    char c;
    return ::recv(fd_, &c, 1, 0) == 0;
  }

  static std::string Lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
 public:
  int fd() const { return fd_; }
 private:
  std::string buf_;
};

AdminServerOptions Options(const std::string& listen, const std::string& token = "",
                           int32_t max_list_limit = 1000) {
  AdminServerOptions o;
  o.listen = listen;
  o.token = token;
  o.max_list_limit = max_list_limit;
  return o;
}

JobSpec Spec(const std::string& id, const std::string& owner = "tracking-svc", int32_t interval = 15,
             int32_t offset = 7, int32_t shard = 3) {
  JobSpec s;
  s.id = id;
  s.owner = owner;
  s.interval_minutes = interval;
  s.offset_minutes = offset;
  s.shard = shard;
  s.topic = "tracking.poll";
  s.key = "shipment-42";
  s.details_json = R"({"shipmentId":42,"nested":{"a":[1,2]}})";
  return s;
}

// A JobReader whose job reads return a scripted answer (or error); its other reads fail.
class ScriptedJobReader final : public JobReader {
 public:
  StatusOr<std::optional<StoredJob>> GetJob(const std::string&) override {
    if (on_get) on_get();
    if (!throw_what.empty()) throw std::runtime_error(throw_what);
    if (!error.ok()) return error;
    return job;
  }
  StatusOr<std::optional<JobAndStats>> GetJobAndStats(const std::string& id) override {
    return JobWithoutStats(GetJob(id));
  }
  StatusOr<JobPage> ListJobs(const JobListFilter&) override {
    if (!error.ok()) return error;
    return JobPage();
  }
  StatusOr<std::vector<JobChange>> ListJobChanges(const std::string&, int64_t, int32_t) override {
    return NotScripted();
  }
  StatusOr<std::optional<BulkOpState>> GetBulkOp(const std::string&) override { return NotScripted(); }
  StatusOr<std::vector<BulkOpState>> ListBulkOps(int32_t) override { return NotScripted(); }
  StatusOr<ManualFireResult> CountBackfill(const ManualFire&) override { return NotScripted(); }

  static Status NotScripted() { return Status::FailedPrecondition("this test reader does not script that read"); }
  Status error;
  std::optional<StoredJob> job;
  std::function<void()> on_get;  // runs first in GetJob
  std::string throw_what;  // non-empty: GetJob throws std::runtime_error with this text
};

// An ExecutionStore with a fixed history of `n` reports for job "h" and fixed stats.
class ScriptedExecutionStore final : public ExecutionStore {
 public:
  StatusOr<ExecutionApplyResult> ApplyReports(const std::vector<ExecutionReport>&) override {
    return ExecutionApplyResult{};
  }
  StatusOr<ExecutionPage> ListExecutions(const std::string& job_id, int32_t limit,
                                         const std::string& cursor) override {
    ExecutionPage page;
    int start = 0;
    if (!cursor.empty()) {
      if (cursor.rfind("after-", 0) != 0) return Status::Invalid("bad_cursor", "bad cursor");
      start = std::stoi(cursor.substr(6));
    }
    for (int i = start; i < n && static_cast<int32_t>(page.records.size()) < limit; ++i) {
      ExecutionRecord rec;
      rec.report.job_id = job_id;
      rec.report.scheduled_for_ms = 1'795'352'432'500 - i * 60'000;
      rec.report.status = ExecutionStatus::kFailed;
      rec.received_at = 1'795'352'500'000;
      page.records.push_back(rec);
      if (i + 1 < n && static_cast<int32_t>(page.records.size()) == limit)
        page.next_cursor = "after-" + std::to_string(i + 1);
    }
    return page;
  }
  StatusOr<std::optional<JobStats>> GetJobStats(const std::string& job_id) override {
    JobStats s;
    s.job_id = job_id;
    s.last_status = ExecutionStatus::kFailed;
    s.last_scheduled_for_ms = 1'795'352'432'500;
    s.last_error = "HTTP 503";
    s.consecutive_failures = 3;
    s.total_failed = 4;
    s.total_succeeded = 9;
    return std::optional<JobStats>(s);
  }
  int n = 5;
};

class FailingLedger final : public ShardLedger {
 public:
  StatusOr<ShardClaim> Claim(int32_t, int64_t, const std::string&, int64_t) override { return error; }
  Status MarkFired(int32_t, int64_t, const std::string&, int64_t, bool) override { return error; }
  Status Advance(int32_t, int64_t, const MinuteRange&, const std::string&) override { return error; }
  Status Release(int32_t, const std::string&) override { return error; }
  StatusOr<DebtClaim> ClaimDebt(int32_t, const std::string&, int64_t) override { return error; }
  Status RenewDebt(int32_t, const std::string&, int64_t) override { return error; }
  Status SettleDebt(int32_t, const MinuteRange&, const std::string&) override { return error; }
  Status ReleaseDebt(int32_t, const std::string&) override { return error; }
  StatusOr<std::vector<ShardState>> LoadStates() override { return error; }
  StatusOr<ShardLayout> ReadLayout() override { return ShardLayout{}; }  // the record reads
  Status error = Status::Retryable("connection refused");
};

class AdminServerTest : public ::testing::Test {
 protected:
  AdminServerTest() : clock_(kNow), ledger_(120, clock_), metrics_("9.9.9-test") {}

  // Starts the server with `jobs` (default: the fake) and returns a client for it.
  void StartServer(AdminServerOptions options = {}, JobReader* jobs = nullptr,
                   ShardLedger* ledger = nullptr) {
    if (options.listen == AdminServerOptions().listen) options.listen = "127.0.0.1:0";
    AdminDeps deps = Deps(jobs, ledger);
    deps.readiness = [this] { return ready_; };
    auto started = AdminServer::Start(options, deps);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    server_ = std::move(*started);
    ASSERT_GT(server_->port(), 0);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_url_encode(false);  // send the paths exactly as written
    client_->set_connection_timeout(5);
    client_->set_read_timeout(5);
  }

  struct Reply {
    int status = 0;
    std::string body;
    std::string content_type;
    httplib::Headers headers;
    Json json() const { return Json::parse(body); }
  };

  Reply Get(const std::string& path, const httplib::Headers& headers = {}) {
    return Wrap(client_->Get(path, headers));
  }

  static Reply Wrap(const httplib::Result& r) {
    Reply out;
    EXPECT_TRUE(r) << "request failed: " << httplib::to_string(r.error());
    if (!r) return out;
    out.status = r->status;
    out.body = r->body;
    out.content_type = r->get_header_value("Content-Type");
    out.headers = r->headers;
    return out;
  }

  // An error reply: the status, a JSON body {"error": "<non-empty>"}.
  static void ExpectError(const Reply& r, int status) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(r.content_type, "application/json");
    Json j = Json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.body;
    ASSERT_TRUE(j.contains("error")) << r.body;
    EXPECT_TRUE(j["error"].is_string());
    EXPECT_FALSE(j["error"].get<std::string>().empty());
  }

  // Deps over a new one-session reader pool of `jobs` and `ledger` (default: the fakes), the fake
  // store's load reads and executions_.
  AdminDeps Deps(JobReader* jobs = nullptr, ShardLedger* ledger = nullptr) {
    const ReadSession session{jobs ? jobs : &store_, &store_, ledger ? ledger : &ledger_, executions_};
    pools_.push_back(
        std::make_unique<ReaderPool>(std::vector<ReadSession>{session}, std::chrono::milliseconds(50)));
    AdminDeps deps;
    deps.readers = pools_.back().get();
    deps.metrics = &metrics_;
    deps.clock = &clock_;
    deps.node_id = "node-a";
    deps.version = "9.9.9-test";
    deps.unknown_zones = [this] { return unknown_zones_; };
    deps.commands = commands_;
    return deps;
  }

  FakeClock clock_;
  FakeJobStore store_;
  ExecutionStore* executions_ = nullptr;
  FakeShardLedger ledger_;
  MetricsRegistry metrics_;
  Status ready_;
  std::vector<std::string> unknown_zones_;
  CommandSubmitter* commands_ = nullptr;
  std::vector<std::unique_ptr<ReaderPool>> pools_;  // outlive the servers
  std::unique_ptr<AdminServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(AdminServerTest, Healthz) {
  StartServer();
  Reply r = Get("/healthz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.json(), Json({{"status", "ok"}}));
}

// The 40 ms stall of issue 16: without TCP_NODELAY, Nagle's algorithm holds the body segment of
// each response until the client's delayed ACK, so every request after the first on a kept-alive
// connection took ~40 ms. 100 requests then take >= 4 s; with TCP_NODELAY, a few ms.
TEST_F(AdminServerTest, KeptAliveConnectionIsFast) {
  store_.Put(Spec("fast-1"));
  StartServer();
  RawConnection conn(server_->port());
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(conn.Get("/healthz").status, 200) << i;
    const RawConnection::Response job = conn.Get("/v1/jobs/fast-1");
    ASSERT_EQ(job.status, 200) << i;
    ASSERT_NE(job.body.find(R"("id":"fast-1")"), std::string::npos);
    ASSERT_EQ(RawConnection::Lower(job.head).find("connection: close"), std::string::npos) << job.head;
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::milliseconds(2000))
      << "100 requests on one kept-alive connection took "
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
}

TEST_F(AdminServerTest, BusySessionsGetA503WithRetryAfter) {
  store_.Put(Spec("busy-1"));
  StartServer();
  {
    std::optional<ReaderPool::Lease> held = pools_.back()->Borrow();  // the pool's only session
    ASSERT_TRUE(held.has_value());
    for (const char* path : {"/v1/jobs/busy-1", "/v1/jobs?owner=x", "/v1/shards", "/v1/jobs/busy-1/next"}) {
      Reply r = Get(path);
      ExpectError(r, 503);
      EXPECT_EQ(r.headers.count("Retry-After") ? r.headers.find("Retry-After")->second : "", "1") << path;
    }
    EXPECT_EQ(Get("/healthz").status, 200);  // no database session needed
  }
  EXPECT_EQ(Get("/v1/jobs/busy-1").status, 200);
  std::map<std::string, double> samples;
  ParseExposition(Get("/metrics").body, &samples);
  EXPECT_EQ(samples[R"(belfry_admin_overload_total{reason="sessions"})"], 4.0);
}

TEST_F(AdminServerTest, RequestsBeyondTheQueueAreTurnedAwayAndProbesStillAnswer) {
  AdminServerOptions options = Options("127.0.0.1:0");
  options.worker_threads = 1;
  options.max_queued_connections = 0;
  ScriptedJobReader blocking;
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  blocking.job = StoredJob{};
  blocking.job->spec = Spec("slow-1");
  blocking.on_get = [&] {
    entered.set_value();
    released.wait();
  };
  // Whatever fails below, the blocked handler is let go, so the test fails instead of hanging in
  // the server's shutdown (http_test timed out here twice on a loaded machine).
  struct LetGo {
    std::promise<void>& release;
    ~LetGo() {
      try {
        release.set_value();
      } catch (const std::future_error&) {  // already let go
      }
    }
  } let_go{release};
  StartServer(options, &blocking);
  RawConnection first(server_->port());
  ASSERT_TRUE(first.Send("GET /v1/jobs/slow-1 HTTP/1.1\r\nHost: x\r\n\r\n"));
  // The only worker is busy with it.
  if (entered.get_future().wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    const RawConnection::Response r = first.Read();
    FAIL() << "the first request did not reach the store within 20 s; it was answered " << r.status << " "
           << r.body;
  }
  RawConnection idle(server_->port());  // kept alive between requests: holds no worker
  // Probes have their own lane: they never wait behind data requests.
  for (const char* probe : {"/healthz", "/readyz"}) {
    RawConnection p(server_->port(), "127.0.0.1", 1000);
    EXPECT_EQ(p.Get(probe).status, 200) << probe;
  }
  RawConnection second(server_->port());
  const RawConnection::Response shed = second.Get("/v1/jobs/slow-1");
  EXPECT_EQ(shed.status, 503);
  EXPECT_NE(shed.body.find("overloaded"), std::string::npos) << shed.body;
  const std::string head = RawConnection::Lower(shed.head);
  EXPECT_NE(head.find("retry-after: 1"), std::string::npos) << shed.head;
  EXPECT_NE(head.find("connection: close"), std::string::npos) << shed.head;
  EXPECT_TRUE(second.ClosedByServer());
  release.set_value();
  EXPECT_EQ(first.Read().status, 200);  // the served connection is unaffected
  EXPECT_EQ(first.Get("/healthz").status, 200);
  // The data lane has no queue: until its one worker is back from the first request, a scrape is
  // turned away too, and counted (3 in 300 runs were, beside a parallel suite).
  int scrape_refusals = 0;
  RawConnection::Response scrape;
  for (int i = 0; i < 100; ++i) {
    RawConnection c(server_->port());
    scrape = c.Get("/metrics");
    if (scrape.status != 503) break;
    ++scrape_refusals;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(scrape.status, 200) << scrape.body;
  std::map<std::string, double> samples;
  ParseExposition(scrape.body, &samples);
  EXPECT_EQ(samples[R"(belfry_admin_overload_total{reason="connections"})"], 1.0 + scrape_refusals);
}

// cpp-httplib bounded each recv(), so a header line every 3 s held a worker without end. The
// head now has one deadline: a connection that trickles it is cut with 408 once it passes.
TEST_F(AdminServerTest, TheRequestHeadHasOneDeadline) {
  AdminServerOptions options = Options("127.0.0.1:0");
  options.request_head_timeout_ms = 600;
  StartServer(options);
  RawConnection slow(server_->port());
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(slow.Send("GET /healthz HTTP/1.1\r\n"));
  RawConnection::Response r;
  for (int i = 0; i < 20 && r.status == 0; ++i) {  // a header line every 200 ms, for up to 4 s
    if (!slow.Send("X-Slow-" + std::to_string(i) + ": 1\r\n")) break;
    pollfd p{slow.fd(), POLLIN, 0};
    if (::poll(&p, 1, 200) == 1) r = slow.Read();
  }
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  EXPECT_EQ(r.status, 408) << r.head << r.body;
  EXPECT_GE(took.count(), 550);
  EXPECT_LT(took.count(), 2000);
  std::map<std::string, double> samples;
  ParseExposition(Get("/metrics").body, &samples);
  EXPECT_EQ(samples["belfry_admin_request_head_timeouts_total"], 1.0);
}

// A head longer than 16 KiB that arrived whole, or one header line longer than cpp-httplib's 8 KiB,
// was handed to cpp-httplib, which answered a bare 400 and kept the connection. Both are 431 now,
// and the connection is closed; a long line within the bound is still served.
TEST_F(AdminServerTest, AnOversizedHeadIsA431WhateverItsShape) {
  StartServer(Options("127.0.0.1:0"));
  const std::string whole = "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(17 * 1024, 'a') + "\r\n\r\n";
  const std::string line = "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Line: " + std::string(9000, 'a') + "\r\n\r\n";
  for (const std::string& head : {whole, line}) {
    RawConnection c(server_->port());
    ASSERT_TRUE(c.Send(head));
    const RawConnection::Response r = c.Read();
    EXPECT_EQ(r.status, 431) << head.size() << " bytes: " << r.head << r.body;
    EXPECT_NE(r.head.find("Connection: close"), std::string::npos) << r.head;
  }
  RawConnection fine(server_->port());
  ASSERT_TRUE(fine.Send("GET /healthz HTTP/1.1\r\nHost: t\r\nX-Line: " + std::string(8000, 'a') + "\r\n\r\n"));
  EXPECT_EQ(fine.Read().status, 200);
}

TEST(RemoveHeaderLinesTest, RemovesEveryLineOfTheNameFromTheHeadOnly) {
  std::string b = "GET /x HTTP/1.1\r\nHost: a\r\naccept-encoding: br\r\nX: 1\r\nAccept-Encoding: gzip\r\n\r\n"
                  "Accept-Encoding: body";
  RemoveHeaderLines(&b, "Accept-Encoding");
  EXPECT_EQ(b, "GET /x HTTP/1.1\r\nHost: a\r\nX: 1\r\n\r\nAccept-Encoding: body");
  std::string last = "GET / HTTP/1.1\r\nAccept-Encoding: br\r\n\r\n";
  RemoveHeaderLines(&last, "accept-encoding");
  EXPECT_EQ(last, "GET / HTTP/1.1\r\n\r\n");
  std::string other = "GET / HTTP/1.1\r\nAccept-Encodings: br\r\nAccept: x\r\n\r\n";  // other names stay
  RemoveHeaderLines(&other, "Accept-Encoding");
  EXPECT_EQ(other, "GET / HTTP/1.1\r\nAccept-Encodings: br\r\nAccept: x\r\n\r\n");
  std::string partial = "GET / HTTP/1.1\r\nAccept-Encoding: br\r\n";  // not complete: untouched
  RemoveHeaderLines(&partial, "Accept-Encoding");
  EXPECT_EQ(partial, "GET / HTTP/1.1\r\nAccept-Encoding: br\r\n");
}

// Browsers ask for br: cpp-httplib 0.11 then compressed every JSON answer and console file with
// brotli at its slowest quality (~100 ms a page of jobs). Every answer is sent uncompressed.
TEST_F(AdminServerTest, AnswersAreNotCompressedWhateverTheClientAccepts) {
  for (int i = 0; i < 30; ++i) store_.Put(Spec("zip-" + std::to_string(i)));
  StartServer();
  for (const char* enc : {"br", "gzip, deflate, br, zstd", "gzip"}) {
    Reply r = Get("/v1/jobs?limit=30", {{"Accept-Encoding", enc}});
    EXPECT_EQ(r.status, 200) << enc;
    EXPECT_FALSE(r.headers.contains("Content-Encoding")) << enc;
    EXPECT_EQ(r.json()["jobs"].size(), 30u) << enc;
    Reply ui = Get("/ui/", {{"Accept-Encoding", enc}});
    EXPECT_FALSE(ui.headers.contains("Content-Encoding")) << enc;
  }
}

TEST(ClassifyHeadTest, MeasuresTheHeadAndEachHeaderLine) {
  EXPECT_EQ(ClassifyHead("GET / HTTP/1.1\r\nHost: a", 64, 32), HeadState::kIncomplete);
  EXPECT_EQ(ClassifyHead("GET / HTTP/1.1\r\nHost: a\r\n\r\n", 64, 32), HeadState::kComplete);
  // The bytes after the blank line (a pipelined request) do not count.
  EXPECT_EQ(ClassifyHead("GET / HTTP/1.1\r\n\r\n" + std::string(100, 'x'), 64, 32), HeadState::kComplete);
  // Longer than the head bound, complete or not.
  EXPECT_EQ(ClassifyHead("GET / HTTP/1.1\r\nA: " + std::string(60, 'a') + "\r\n\r\n", 64, 128), HeadState::kTooLarge);
  EXPECT_EQ(ClassifyHead("GET / HTTP/1.1\r\nA: " + std::string(60, 'a'), 64, 128), HeadState::kTooLarge);
  // A header line with its CRLF: 32 bytes pass, 33 do not, finished or not.
  EXPECT_EQ(ClassifyHead("GET / HTTP/1.1\r\nA: " + std::string(27, 'a') + "\r\n\r\n", 256, 32), HeadState::kComplete);
  EXPECT_EQ(ClassifyHead("GET / HTTP/1.1\r\nA: " + std::string(28, 'a') + "\r\n\r\n", 256, 32), HeadState::kTooLarge);
  EXPECT_EQ(ClassifyHead("GET / HTTP/1.1\r\nA: " + std::string(40, 'a'), 256, 32), HeadState::kTooLarge);
  // The request line is not a header line (cpp-httplib bounds the target on its own, 414).
  EXPECT_EQ(ClassifyHead("GET /" + std::string(60, 'p') + " HTTP/1.1\r\n\r\n", 256, 32), HeadState::kComplete);
}

// Issue 33: 140 connections from one client, each sending a header line every 3 s, held every
// worker and queue place, and 20 of 23 /healthz probes timed out on a healthy node. Here the
// attack runs for 15 s from 127.0.0.1 (reconnecting whatever the server closes, as an attacker
// would), while probes (fresh and kept-alive connections) come from 127.0.0.2 and data requests
// from 127.0.0.3, each with a 1 s timeout. Every one must be answered, in time, throughout.
TEST_F(AdminServerTest, SlowClientsCannotMakeAHealthyNodeLookDead) {
  store_.Put(Spec("fast-1"));
  StartServer();  // the defaults: what a node runs with
  const int port = server_->port();
  constexpr int kSlowConnections = 140;
  constexpr auto kAttack = std::chrono::seconds(15);
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + kAttack;

  std::atomic<int> refused_at_once{0};  // 503 before the head was complete
  std::atomic<int> head_timeouts{0};    // 408
  std::atomic<int> connect_errno{0};
  std::thread attacker([&] {
    std::vector<int> fds(kSlowConnections, -1);
    auto open = [&](int& fd) {
      fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<uint16_t>(port));
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        connect_errno = errno;
        return;
      }
      const std::string line = "GET /v1/jobs/fast-1 HTTP/1.1\r\n";
      (void)::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
    };
    for (int& fd : fds) open(fd);
    // Every 100 ms: read what the server answered (then close; reopened at the next round). Every
    // 3 s: one more header line on each open connection, and reopen the closed ones.
    for (int tick = 1; std::chrono::steady_clock::now() < end; ++tick) {
      std::this_thread::sleep_until(std::min(end, start + tick * std::chrono::milliseconds(100)));
      const bool round = tick % 30 == 0;
      for (int& fd : fds) {
        if (fd < 0) {
          if (round) open(fd);
          continue;
        }
        char buf[256];
        const ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
          const std::string text(buf, n > 0 ? static_cast<size_t>(n) : 0);
          if (text.starts_with("HTTP/1.1 503")) ++refused_at_once;
          if (text.starts_with("HTTP/1.1 408")) ++head_timeouts;
          ::close(fd);
          fd = -1;
          continue;
        }
        if (!round) continue;
        const std::string header = "X-Trickle-" + std::to_string(tick) + ": 1\r\n";
        (void)::send(fd, header.data(), header.size(), MSG_NOSIGNAL);
      }
    }
    for (int fd : fds) ::close(fd);
  });

  struct Tally {
    int sent = 0;
    int late_or_failed = 0;
    std::string first_failure;
  };
  // Each client sends a request every 250 ms, each with a 1 s timeout.
  auto client = [&](const char* source, std::vector<std::string> paths, bool keep_alive, Tally* t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the attack is under way
    std::unique_ptr<RawConnection> kept;
    for (size_t i = 0; std::chrono::steady_clock::now() < end; ++i) {
      const std::string& path = paths[i % paths.size()];
      const auto sent_at = std::chrono::steady_clock::now();
      if (!kept) kept = std::make_unique<RawConnection>(port, source, 1000);
      const RawConnection::Response r = kept->Get(path);
      const auto took = std::chrono::steady_clock::now() - sent_at;
      ++t->sent;
      if (r.status != 200 || took > std::chrono::seconds(1)) {
        if (t->late_or_failed++ == 0) {
          t->first_failure = path + " -> " + std::to_string(r.status) + " after " +
                             std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()) +
                             " ms, " + std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(sent_at - start).count()) +
                             " ms into the attack";
        }
      }
      if (!keep_alive || r.status != 200) kept.reset();
      std::this_thread::sleep_until(sent_at + std::chrono::milliseconds(250));
    }
  };
  Tally fresh_probes, kept_probes, fresh_data, kept_data;
  std::thread t1(client, "127.0.0.2", std::vector<std::string>{"/healthz", "/readyz"}, false, &fresh_probes);
  std::thread t2(client, "127.0.0.2", std::vector<std::string>{"/healthz", "/readyz"}, true, &kept_probes);
  std::thread t3(client, "127.0.0.3", std::vector<std::string>{"/v1/jobs/fast-1"}, false, &fresh_data);
  std::thread t4(client, "127.0.0.3", std::vector<std::string>{"/v1/jobs/fast-1"}, true, &kept_data);
  for (std::thread* t : {&attacker, &t1, &t2, &t3, &t4}) t->join();

  for (const auto& [name, t] : {std::pair<const char*, Tally*>{"fresh probes", &fresh_probes},
                                {"kept-alive probes", &kept_probes},
                                {"fresh data requests", &fresh_data},
                                {"kept-alive data requests", &kept_data}}) {
    EXPECT_GT(t->sent, 40) << name;
    EXPECT_EQ(t->late_or_failed, 0) << t->late_or_failed << " of " << t->sent << " " << name
                                    << " failed or took over 1 s; first: " << t->first_failure;
  }
  // The attacker's connections beyond its 32 were turned away at once, and the ones admitted were
  // cut when their head's deadline passed.
  std::printf("attack: connect errno %d; %d answered 503 at once, %d cut with 408; probes %d fresh + %d kept-alive, data %d + %d\n",
              connect_errno.load(), refused_at_once.load(), head_timeouts.load(), fresh_probes.sent, kept_probes.sent, fresh_data.sent,
              kept_data.sent);
  EXPECT_GE(refused_at_once.load(), kSlowConnections - 32);
  EXPECT_GE(head_timeouts.load(), 32);
}

// Issue 33: each /readyz and each scrape opened a database connection and waited for it, so an
// unreachable database stalled them all. With the readiness a CachedCheck (as `belfry serve`
// wires it), a check that hangs (a blackholed database) never holds a probe or a scrape.
TEST_F(AdminServerTest, ReadyzAndMetricsAnswerAtOnceWhileTheDatabaseCheckHangs) {
  std::promise<void> unblock;
  std::shared_future<void> unblocked = unblock.get_future().share();
  CachedCheck check([&] {
    unblocked.wait();
    return Status::Retryable("connection timed out");
  }, clock_);
  metrics_.SetSampler([&](MetricsRegistry& m) { m.SetReady(check.Get().ok()); });
  AdminDeps deps = Deps();
  deps.readiness = [&] { return check.Get(); };
  auto started = AdminServer::Start(Options("127.0.0.1:0"), deps);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  server_ = std::move(*started);
  for (int i = 0; i < 20; ++i) {
    RawConnection c(server_->port(), "127.0.0.1", 1000);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(c.Get("/readyz").status, 503);
    EXPECT_EQ(c.Get("/metrics").status, 200);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500)) << i;
  }
  EXPECT_EQ(check.checks_started(), 1);  // one connection attempt, not one per request
  unblock.set_value();
  server_.reset();
  metrics_.SetSampler({});  // it refers to `check`
}

TEST_F(AdminServerTest, ConnectionsPerClientAddressAreLimited) {
  AdminServerOptions options = Options("127.0.0.1:0");
  options.max_connections_per_client = 2;
  StartServer(options);
  RawConnection a(server_->port(), "127.0.0.1");
  RawConnection b(server_->port(), "127.0.0.1");
  ASSERT_EQ(a.Get("/healthz").status, 200);
  ASSERT_EQ(b.Get("/healthz").status, 200);
  RawConnection c(server_->port(), "127.0.0.1");
  const RawConnection::Response refused = c.Get("/healthz");
  EXPECT_EQ(refused.status, 503);
  EXPECT_NE(refused.body.find("this client has 2 connections open"), std::string::npos) << refused.body;
  EXPECT_NE(RawConnection::Lower(refused.head).find("retry-after: 1"), std::string::npos) << refused.head;
  EXPECT_TRUE(c.ClosedByServer());
  RawConnection other(server_->port(), "127.0.0.2");  // another client is not affected
  EXPECT_EQ(other.Get("/healthz").status, 200);
  std::map<std::string, double> samples;
  ParseExposition(other.Get("/metrics").body, &samples);
  EXPECT_EQ(samples[R"(belfry_admin_overload_total{reason="client"})"], 1.0);
}

// Found by schemathesis: bytes PostgreSQL cannot compare with text (invalid UTF-8) made the
// statement fail with a 500, and a NUL cut the value short at libpq (a%00b read job "a").
TEST_F(AdminServerTest, TextThatCannotBeStoredIsA400) {
  store_.Put(Spec("a"));
  StartServer();
  for (const char* path : {"/v1/jobs/%FF", "/v1/jobs/a%00b", "/v1/jobs/%FF/next", "/v1/jobs/a%00/executions",
                           "/v1/jobs?owner=%FF", "/v1/jobs?owner=%00", "/v1/jobs?topic=x%C3", "/v1/jobs?cursor=_w",
                           "/v1/jobs?cursor=AA"}) {
    Reply r = Get(path);
    ExpectError(r, 400);
    const bool about_cursor = r.json()["error"].get<std::string>().find("cursor") != std::string::npos;
    EXPECT_EQ(about_cursor, std::string(path).find("cursor=") != std::string::npos)
        << path << ": " << r.body;
  }
  EXPECT_EQ(Get("/v1/jobs/a").status, 200);
  EXPECT_EQ(Get("/v1/jobs/%C3%A9t%C3%A9").status, 404);  // valid UTF-8: looked up, not found
}

TEST_F(AdminServerTest, ReadyzFollowsReadiness) {
  StartServer();
  Reply r = Get("/readyz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.json(), Json({{"status", "ready"}}));

  ready_ = Status::Retryable("commands consumer has no partition assignment yet");
  r = Get("/readyz");
  ExpectError(r, 503);
  EXPECT_EQ(r.json()["status"], "not_ready");
  EXPECT_NE(r.json()["error"].get<std::string>().find("no partition assignment"), std::string::npos);
}

// Calendar jobs skipped for a zone this node's tzdata lacks: /readyz names the zones, as a
// warning; the node stays ready (and not-ready stays for its own reason).
TEST_F(AdminServerTest, ReadyzListsUnknownZonesWithoutFailing) {
  StartServer();
  unknown_zones_ = {"Mars/Olympus_Mons"};
  Reply r = Get("/readyz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.json(), Json({{"status", "ready"}, {"unknown_zones", {"Mars/Olympus_Mons"}}}));
  ready_ = Status::Retryable("database down");
  r = Get("/readyz");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.json()["unknown_zones"], Json({"Mars/Olympus_Mons"}));
}

TEST_F(AdminServerTest, MetricsParseAsPrometheusTextAndMoveAfterOnFired) {
  StartServer();
  Reply r = Get("/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(r.content_type.starts_with("text/plain; version=0.0.4")) << r.content_type;
  std::map<std::string, double> before;
  ASSERT_EQ(ParseExposition(r.body, &before), "") << r.body;
  EXPECT_EQ(before.at("belfry_triggers_emitted_total"), 0);
  EXPECT_EQ(before.at("belfry_build_info{version=\"9.9.9-test\"}"), 1);

  ShardMinuteReport fired;
  fired.triggers = 12;
  fired.lateness_ms = 30;
  metrics_.OnFired(fired);
  r = Get("/metrics");
  std::map<std::string, double> after;
  ASSERT_EQ(ParseExposition(r.body, &after), "") << r.body;
  EXPECT_EQ(after.at("belfry_triggers_emitted_total"), 12);
  EXPECT_EQ(after.at("belfry_shard_minutes_fired_total{kind=\"on_time\"}"), 1);
  EXPECT_EQ(after.at("belfry_trigger_lateness_seconds_count"), 12);
}

TEST_F(AdminServerTest, GetJobReturnsTheStoredJob) {
  JobSpec s = Spec("shipment-42-poll");
  s.start_at = *ParseIsoTime("2026-11-22T13:00:00Z");
  s.priority = 2;
  store_.Put(s);
  StartServer();
  Reply r = Get("/v1/jobs/shipment-42-poll");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  const Json expected = {
      {"id", "shipment-42-poll"},
      {"owner", "tracking-svc"},
      {"topic", "tracking.poll"},
      {"key", "shipment-42"},
      {"labels", Json::object()},
      {"intervalMinutes", 15},
      {"offsetMinutes", 7},
      {"shard", 3},
      {"cron", nullptr},
      {"timeZone", nullptr},
      {"startDateTime", "2026-11-22T13:00:00.000Z"},
      {"endDateTime", nullptr},
      {"maxFires", nullptr},
      {"firesEndAt", nullptr},
      {"paused", false},
      {"pause", nullptr},
      {"priority", 2},
      {"runAt", nullptr},
      {"scheduledFor", nullptr},
      {"maxRetries", 0},
      {"retryBackoff", {{"initialSeconds", 60}, {"multiplier", 2}, {"maxSeconds", 3600}}},
      {"jobDetails", {{"shipmentId", 42}, {"nested", {{"a", {1, 2}}}}}},
      {"createdAt", nullptr},  // the fake store does not track times
      {"updatedAt", nullptr},
      {"nextTriggerAt",
       FormatIsoTime(NextTriggerTimes(15, 7, 3, 500, s.start_at, std::nullopt, kNow, 1).at(0))},
      {"nextFires", Json::parse(EncodeNextFires(NextFires(SystemTimeZones(), s, false, 500, kNow, 3)))},
      {"lastOutcome", nullptr},  // no execution store in this test
      {"consecutiveFailures", 0},
      {"totalSucceeded", 0},
      {"totalFailed", 0},
      {"firesRemaining", nullptr},
      {"lastDeliveryError", nullptr},  // no trigger of it was refused
  };
  EXPECT_EQ(r.json(), expected) << r.body;
  // Fields come in the documented order.
  EXPECT_TRUE(r.body.starts_with(R"({"id":"shipment-42-poll","owner":"tracking-svc","topic")")) << r.body;
}

TEST_F(AdminServerTest, GetJobWithTimesAndNoKeyOrOwner) {
  ScriptedJobReader scripted;
  StoredJob j;
  j.spec = Spec("j1", "");
  j.spec.key.clear();
  j.spec.end_at = *ParseIsoTime("2027-01-01T00:00:00Z");
  j.paused = true;
  j.pause_reason = "carrier outage";
  j.paused_at = *ParseIsoTime("2026-11-20T09:00:00Z");
  j.created_at = *ParseIsoTime("2026-11-20T08:00:00.125Z");
  j.updated_at = *ParseIsoTime("2026-11-21T09:30:00Z");
  scripted.job = j;
  StartServer({}, &scripted);
  Json got = Get("/v1/jobs/j1").json();
  EXPECT_EQ(got["owner"], nullptr);
  EXPECT_EQ(got["key"], nullptr);
  EXPECT_EQ(got["paused"], true);
  EXPECT_EQ(got["pause"], (Json{{"reason", "carrier outage"}, {"actor", nullptr}, {"since", "2026-11-20T09:00:00.000Z"}}));
  EXPECT_EQ(got["endDateTime"], "2027-01-01T00:00:00.000Z");
  EXPECT_EQ(got["createdAt"], "2026-11-20T08:00:00.125Z");
  EXPECT_EQ(got["updatedAt"], "2026-11-21T09:30:00.000Z");
}

TEST_F(AdminServerTest, UnknownJobIs404) {
  StartServer();
  Reply r = Get("/v1/jobs/nope");
  ExpectError(r, 404);
  EXPECT_NE(r.json()["error"].get<std::string>().find("nope"), std::string::npos);
  ExpectError(Get("/v1/jobs/nope/next"), 404);
}

TEST_F(AdminServerTest, JobIdsMayContainAnyEncodedCharacters) {
  const std::vector<std::string> ids = {"a/b",    "a/next",      "with space+plus", "q?x=1&y#frag",
                                        "pct%41", "caf\xC3\xA9", "line\nbreak",     "next"};
  for (const std::string& id : ids) store_.Put(Spec(id));
  store_.Put(Spec("a"));
  StartServer();
  for (const std::string& id : ids) {
    Reply r = Get("/v1/jobs/" + Encode(id));
    ASSERT_EQ(r.status, 200) << id << ": " << r.body;
    EXPECT_EQ(r.json()["id"], id);
    r = Get("/v1/jobs/" + Encode(id) + "/next?n=2");
    ASSERT_EQ(r.status, 200) << id << ": " << r.body;
    EXPECT_EQ(r.json()["id"], id);
    EXPECT_EQ(r.json()["next"].size(), 2u);
  }
  // An unencoded "/next" is the sub-resource of job "a"; an encoded one is part of the id.
  EXPECT_TRUE(Get("/v1/jobs/a/next").json().contains("next"));
  EXPECT_EQ(Get("/v1/jobs/a%2Fnext").json()["id"], "a/next");
  EXPECT_FALSE(Get("/v1/jobs/a%2Fnext").json().contains("next"));
  ExpectError(Get("/v1/jobs/bad%zzescape"), 400);
  ExpectError(Get("/v1/jobs/%"), 400);
}

TEST_F(AdminServerTest, ListPaginatesAcrossThreePagesWithOwnerFilter) {
  // 21 jobs; every third one belongs to "ops" (7 jobs), the rest to two other owners.
  std::vector<std::string> ops_ids;
  for (int i = 0; i < 21; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "job-%02d", i);
    const std::string owner = i % 3 == 0 ? "ops" : (i % 3 == 1 ? "billing" : "tracking");
    store_.Put(Spec(id, owner));
    if (owner == "ops") ops_ids.push_back(id);
  }
  StartServer();
  std::vector<std::string> seen;
  std::string cursor;
  std::vector<size_t> page_sizes;
  for (int page = 0; page < 10; ++page) {
    std::string path = "/v1/jobs?owner=ops&limit=3";
    if (!cursor.empty()) path += "&cursor=" + cursor;
    Reply r = Get(path);
    ASSERT_EQ(r.status, 200) << r.body;
    Json j = r.json();
    page_sizes.push_back(j["jobs"].size());
    for (const Json& job : j["jobs"]) {
      EXPECT_EQ(job["owner"], "ops");
      seen.push_back(job["id"]);
    }
    if (j["next_cursor"].is_null()) break;
    cursor = j["next_cursor"].get<std::string>();
    // The cursor is opaque: base64url, not the raw id.
    EXPECT_EQ(cursor.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
              std::string::npos);
    EXPECT_EQ(cursor.find("job-"), std::string::npos);
  }
  EXPECT_EQ(page_sizes, (std::vector<size_t>{3, 3, 1}));
  EXPECT_EQ(seen, ops_ids);
}

TEST_F(AdminServerTest, ListExactMultipleEndsWithoutAnEmptyPage) {
  for (int i = 0; i < 4; ++i) store_.Put(Spec("j" + std::to_string(i)));
  StartServer();
  Json p1 = Get("/v1/jobs?limit=2").json();
  ASSERT_EQ(p1["jobs"].size(), 2u);
  ASSERT_TRUE(p1["next_cursor"].is_string());
  Json p2 = Get("/v1/jobs?limit=2&cursor=" + p1["next_cursor"].get<std::string>()).json();
  EXPECT_EQ(p2["jobs"].size(), 2u);
  EXPECT_TRUE(p2["next_cursor"].is_null());
}

// Issue 33: ?limit=1000 asked the store for 1001 rows, the store clamped to 1000, and the answer
// never had a next_cursor. The store now reads limit + 1 itself (JobPageOf), as the fake does.
TEST_F(AdminServerTest, AFullPageOfTheMostJobsHasANextCursor) {
  for (int i = 0; i < 1001; ++i) store_.Put(Spec(fmt::format("m{:04d}", i)));
  StartServer();
  Json p1 = Get("/v1/jobs?limit=1000").json();
  ASSERT_EQ(p1["jobs"].size(), 1000u);
  ASSERT_TRUE(p1["next_cursor"].is_string()) << p1["next_cursor"];
  Json p2 = Get("/v1/jobs?limit=1000&cursor=" + p1["next_cursor"].get<std::string>()).json();
  ASSERT_EQ(p2["jobs"].size(), 1u);
  EXPECT_EQ(p2["jobs"][0]["id"], "m1000");
  EXPECT_TRUE(p2["next_cursor"].is_null());
}

TEST_F(AdminServerTest, ListDefaultsToAHundredAndFiltersByTopic) {
  for (int i = 0; i < 150; ++i) {
    JobSpec s = Spec("job-" + std::to_string(1000 + i));
    if (i % 10 == 0) s.topic = "eta.recompute";
    store_.Put(s);
  }
  StartServer();
  Json all = Get("/v1/jobs").json();
  EXPECT_EQ(all["jobs"].size(), 100u);
  EXPECT_TRUE(all["next_cursor"].is_string());
  Json eta = Get("/v1/jobs?topic=eta.recompute").json();
  EXPECT_EQ(eta["jobs"].size(), 15u);
  EXPECT_TRUE(eta["next_cursor"].is_null());
  for (const Json& j : eta["jobs"]) EXPECT_EQ(j["topic"], "eta.recompute");
  // Empty values, as in a filled-in template, mean "not given".
  EXPECT_EQ(Get("/v1/jobs?owner=&topic=&limit=&cursor=").json()["jobs"].size(), 100u);
  // No match is an empty page, not an error.
  Json none = Get("/v1/jobs?owner=nobody").json();
  EXPECT_EQ(none, Json({{"jobs", Json::array()}, {"next_cursor", nullptr}}));
}

TEST_F(AdminServerTest, ListFiltersByEveryLabelGiven) {
  for (int i = 0; i < 12; ++i) {
    JobSpec s = Spec("job-" + std::to_string(10 + i), i < 6 ? "svc-a" : "svc-b");
    s.labels_json = std::string(R"({"region":")") + (i % 2 ? "us" : "eu") + R"(","team":")" +
                    (i % 3 ? "billing" : "tracking") + R"("})";
    store_.Put(s);
  }
  store_.Put(Spec("unlabelled"));
  StartServer();
  const auto ids = [&](const std::string& query) {
    Reply r = Get("/v1/jobs?" + query);
    EXPECT_EQ(r.status, 200) << query << ": " << r.body;
    const Json page = r.json();
    std::vector<std::string> out;
    for (const Json& j : page["jobs"]) out.push_back(j["id"]);
    return out;
  };
  EXPECT_EQ(ids("label=team%3Dtracking"), (std::vector<std::string>{"job-10", "job-13", "job-16", "job-19"}));
  EXPECT_EQ(ids("label=team=tracking&label=region=eu"), (std::vector<std::string>{"job-10", "job-16"}));
  EXPECT_EQ(ids("label=team=tracking&owner=svc-b"), (std::vector<std::string>{"job-16", "job-19"}));
  EXPECT_TRUE(ids("label=team=nobody").empty());
  // Labels come back as the job's object.
  EXPECT_EQ(Get("/v1/jobs/job-10").json()["labels"], (Json{{"region", "eu"}, {"team", "tracking"}}));
  EXPECT_EQ(Get("/v1/jobs/unlabelled").json()["labels"], Json::object());
  // A filter that breaks the label rules is a 400 that says why.
  for (const std::string bad : {"label=team", "label=bad%20key=x", "label=team=a&label=team=b", "label=k=%00",
                                "label=k=%FF", "label=k=%zz"}) {
    Reply r = Get("/v1/jobs?" + bad);
    ExpectError(r, 400);
  }
  EXPECT_NE(Get("/v1/jobs?label=team").json()["error"].get<std::string>().find("key=value"), std::string::npos);
}

// Issue 18: bulk operations and their progress, newest first; 404 for an unknown id.
TEST_F(AdminServerTest, BulkOperationsAndTheirProgress) {
  for (int i = 0; i < 6; ++i) store_.Put(Spec("job-" + std::to_string(i), "svc-a"));
  BulkOp pause;
  pause.id = "freeze/2026 11";  // a '/' and a space: percent-encoded in the path
  pause.op = CommandOp::kPause;
  pause.selector.owner = "svc-a";
  pause.reason = "carrier outage";
  pause.source = SourcePosition{4, 99, 1795354620000};
  BulkOp count = pause;
  count.id = "count-b";
  count.op = CommandOp::kDelete;
  count.selector.owner.reset();
  count.selector.labels_json = R"({"team":"b"})";
  count.reason.clear();
  count.dry_run = true;
  count.source.offset = 100;
  ASSERT_TRUE(store_.AcceptBulkOps({pause, count}).ok());
  for (StatusOr<std::optional<BulkOpState>> s = store_.RunBulkStep(1000, 1795354630000);
       s.ok() && s->has_value() && (*s)->op.id == "freeze/2026 11"; s = store_.RunBulkStep(1000, 1795354630000)) {
  }
  StartServer();

  Reply one = Get("/v1/bulk-ops/freeze%2F2026%2011");
  ASSERT_EQ(one.status, 200) << one.body;
  const Json op = one.json();
  EXPECT_EQ(op["op"], "pause");
  EXPECT_EQ(op["selector"], (Json{{"owner", "svc-a"}}));
  EXPECT_EQ(op["reason"], "carrier outage");
  EXPECT_TRUE(op["actor"].is_null());
  EXPECT_EQ(op["state"], "finished");
  EXPECT_EQ(op["matched"], 6);
  EXPECT_EQ(op["changed"], 6);
  EXPECT_EQ(op["commandAt"], "2026-11-22T13:37:00.000Z");
  EXPECT_EQ(op["source"], (Json{{"partition", 4}, {"offset", 99}}));

  Reply list = Get("/v1/bulk-ops");
  ASSERT_EQ(list.status, 200) << list.body;
  const Json ops = list.json()["bulkOps"];
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0]["id"], "count-b") << "newest first";
  EXPECT_EQ(ops[0]["state"], "running");
  EXPECT_EQ(ops[0]["dryRun"], true);
  EXPECT_EQ(ops[0]["selector"], (Json{{"labels", {{"team", "b"}}}}));
  EXPECT_EQ(Get("/v1/bulk-ops?limit=1").json()["bulkOps"].size(), 1u);

  ExpectError(Get("/v1/bulk-ops/nope"), 404);
  ExpectError(Get("/v1/bulk-ops/%zz"), 400);
  ExpectError(Get("/v1/bulk-ops?limit=0"), 400);
  ExpectError(Get("/v1/bulk-ops?owner=x"), 400);
  ExpectError(Get("/v1/bulk-ops/freeze%2F2026%2011?x=1"), 400);
}

// Issue 18: a job's change history, newest first, in keyset pages; a deleted (or unknown) job's
// history is a page like any other.
TEST_F(AdminServerTest, AJobsChangeHistoryInPages) {
  for (int i = 0; i < 3; ++i) {
    JobChange c;
    c.job_id = "a/b";
    c.op = i == 2 ? "delete" : "upsert";
    c.actor = "deploy-bot";
    c.source = SourcePosition{1, 10 + i, 1795354620000};
    c.changed_at = 1795354621000 + i;
    c.before_json = i == 0 ? "" : R"({"id":"a/b","paused":false})";
    c.after_json = i == 2 ? "" : R"({"id":"a/b","paused":false})";
    store_.AddChange(c);
    c.job_id = "other";
    store_.AddChange(c);
  }
  StartServer();
  Reply first = Get("/v1/jobs/a%2Fb/changes?limit=2");
  ASSERT_EQ(first.status, 200) << first.body;
  const Json page = first.json();
  EXPECT_EQ(page["id"], "a/b");
  ASSERT_EQ(page["changes"].size(), 2u);
  EXPECT_EQ(page["changes"][0]["op"], "delete") << "newest first";
  EXPECT_TRUE(page["changes"][0]["after"].is_null());
  EXPECT_EQ(page["changes"][0]["version"], 1);
  EXPECT_EQ(page["changes"][0]["actor"], "deploy-bot");
  EXPECT_EQ(page["changes"][0]["source"]["offset"], 12);
  EXPECT_EQ(page["changes"][1]["source"]["offset"], 11);
  ASSERT_TRUE(page["next_cursor"].is_string());
  Reply second = Get("/v1/jobs/a%2Fb/changes?limit=2&cursor=" + page["next_cursor"].get<std::string>());
  ASSERT_EQ(second.status, 200) << second.body;
  ASSERT_EQ(second.json()["changes"].size(), 1u);
  EXPECT_TRUE(second.json()["changes"][0]["before"].is_null()) << "the create";
  EXPECT_TRUE(second.json()["next_cursor"].is_null());
  Reply none = Get("/v1/jobs/never/changes");
  ASSERT_EQ(none.status, 200) << none.body;
  EXPECT_TRUE(none.json()["changes"].empty());
  ExpectError(Get("/v1/jobs/a/changes?limit=0"), 400);
  ExpectError(Get("/v1/jobs/a/changes?cursor=abc"), 400);
  ExpectError(Get("/v1/jobs/a/changes?owner=x"), 400);
}

TEST_F(AdminServerTest, ListRejectsBadParameters) {
  StartServer(Options("127.0.0.1:0", "", 50));
  ExpectError(Get("/v1/jobs?limit=0"), 400);
  ExpectError(Get("/v1/jobs?limit=-3"), 400);
  ExpectError(Get("/v1/jobs?limit=51"), 400);
  ExpectError(Get("/v1/jobs?limit=abc"), 400);
  ExpectError(Get("/v1/jobs?limit=5x"), 400);
  ExpectError(Get("/v1/jobs?limit=99999999999999999999"), 400);
  ExpectError(Get("/v1/jobs?cursor=***"), 400);
  ExpectError(Get("/v1/jobs?cursor=A"), 400);
  ExpectError(Get("/v1/jobs?ownr=ops"), 400);
  EXPECT_EQ(Get("/v1/jobs?limit=50").status, 200);
  EXPECT_NE(Get("/v1/jobs?limit=51").json()["error"].get<std::string>().find("1..50"), std::string::npos);
}

TEST_F(AdminServerTest, NextMatchesNextTriggerTimes) {
  JobSpec s = Spec("every-15", "o", 15, 7, 42);
  s.end_at = kNow + 40 * kMsPerMinute;  // cuts the schedule after a few triggers
  store_.Put(s);
  store_.Put(Spec("every-1", "o", 1, 0, 119));
  StartServer();

  auto expected = [&](const JobSpec& spec, int n) {
    Json out = Json::array();
    for (EpochMs t : NextTriggerTimes(spec.interval_minutes, spec.offset_minutes, spec.shard, 500,
                                      spec.start_at, spec.end_at, kNow, n)) {
      out.push_back(FormatIsoTime(t));
    }
    return out;
  };
  Json r = Get("/v1/jobs/every-1/next").json();
  EXPECT_EQ(r["id"], "every-1");
  EXPECT_EQ(r["paused"], false);
  EXPECT_EQ(r["next"].size(), 10u);  // default n
  EXPECT_EQ(r["next"], expected(Spec("every-1", "o", 1, 0, 119), 10));
  EXPECT_EQ(r["next"][0], "2026-11-22T13:37:59.500Z");  // shard 119's slot in this minute

  r = Get("/v1/jobs/every-1/next?n=1000").json();
  EXPECT_EQ(r["next"].size(), 1000u);

  r = Get("/v1/jobs/every-15/next?n=5").json();
  EXPECT_EQ(r["next"], expected(s, 5));
  // 817 min into the day = 7 (mod 15): due this minute at shard 42's slot, 21 s in; end_at cuts it at 3.
  EXPECT_EQ(r["next"],
            Json({"2026-11-22T13:37:21.000Z", "2026-11-22T13:52:21.000Z", "2026-11-22T14:07:21.000Z"}));

  ExpectError(Get("/v1/jobs/every-1/next?n=0"), 400);
  ExpectError(Get("/v1/jobs/every-1/next?n=1001"), 400);
  ExpectError(Get("/v1/jobs/every-1/next?n=ten"), 400);
  ExpectError(Get("/v1/jobs/every-1/next?count=3"), 400);
}

TEST_F(AdminServerTest, NextOfAPausedJobIsEmpty) {
  store_.Put(Spec("sleepy"), /*paused=*/true);
  StartServer();
  Reply r = Get("/v1/jobs/sleepy/next?n=3");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.json(),
            Json({{"id", "sleepy"}, {"paused", true}, {"next", Json::array()}, {"fires", Json::array()}}));
}

TEST_F(AdminServerTest, CronJobShowsItsExpressionZoneAndDstMarkedFires) {
  JobSpec s = Spec("berlin-0230");
  const SchedulerConfig cfg;
  // Europe/Berlin springs forward on 2027-03-28 at 02:00 -> 03:00 (01:00Z); kNow is 2026-11-22.
  ASSERT_TRUE(
      PlanCalendarJob(SystemTimeZones(), "30 2 28 3 *", "Europe/Berlin", kNow, cfg.intervals, &s).ok());
  store_.Put(s);
  StartServer();
  Json job = Get("/v1/jobs/berlin-0230").json();
  EXPECT_EQ(job["cron"], "30 2 28 3 *");
  EXPECT_EQ(job["timeZone"], "Europe/Berlin");
  EXPECT_EQ(job["intervalMinutes"], 0);
  EXPECT_EQ(job["nextTriggerAt"], "2027-03-28T01:00:01.500Z");  // 03:00 CEST, at shard 3's second
  ASSERT_EQ(job["nextFires"].size(), 3u);
  EXPECT_EQ(job["nextFires"][0]["local"], "2027-03-28T03:00:00+02:00");
  EXPECT_EQ(job["nextFires"][0]["dst"], "moved_from_gap");
  Json r = Get("/v1/jobs/berlin-0230/next?n=2").json();
  EXPECT_EQ(r["cron"], "30 2 28 3 *");
  EXPECT_EQ(r["next"], Json({"2027-03-28T01:00:01.500Z", "2028-03-28T00:30:01.500Z"}));
  ASSERT_EQ(r["fires"].size(), 2u);
  EXPECT_EQ(r["fires"][0], Json({{"at", "2027-03-28T01:00:01.500Z"},
                                 {"local", "2027-03-28T03:00:00+02:00"},
                                 {"dst", "moved_from_gap"}}));
  EXPECT_EQ(r["fires"][1]["local"], "2028-03-28T02:30:00+02:00");
  EXPECT_EQ(r["fires"][1]["dst"], nullptr);
}

TEST_F(AdminServerTest, ShardsReportWatermarksClaimsAndLag) {
  const int64_t minute = EpochMinuteOf(kNow);  // 13:37; now is 10.25 s into it
  ledger_.SetFiredThrough(0, minute);          // slot 13:37:00.000 passed and fired: up to date
  ledger_.SetFiredThrough(1, minute - 5);      // owes 13:33 .. 13:37
  ledger_.SetFiredThrough(100, minute - 1);    // slot 13:37:50 not yet due: up to date
  ASSERT_TRUE(ledger_.Claim(1, minute, "node-b", 3000)->claimed);
  StartServer();
  Reply r = Get("/v1/shards");
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = r.json();
  EXPECT_EQ(j["now"], "2026-11-22T13:37:10.250Z");
  ASSERT_EQ(j["shards"].size(), 120u);
  const Json& s0 = j["shards"][0];
  EXPECT_EQ(s0["shard"], 0);
  EXPECT_EQ(s0["fired_through"], "2026-11-22T13:37:00.000Z");
  EXPECT_EQ(s0["fired_through_minute"], minute);
  EXPECT_EQ(s0["claim_node"], nullptr);
  EXPECT_EQ(s0["claim_live"], false);
  EXPECT_EQ(s0["lag_seconds"], 0.0);

  const Json& s1 = j["shards"][1];
  EXPECT_EQ(s1["fired_through_minute"], minute - 5);
  EXPECT_EQ(s1["claim_node"], "node-b");
  EXPECT_EQ(s1["claim_live"], true);
  EXPECT_EQ(s1["claim_until"], "2026-11-22T13:37:13.250Z");
  EXPECT_EQ(s1["behind_minutes"], 5);
  // The oldest owed slot is 13:33:00.500.
  EXPECT_DOUBLE_EQ(s1["lag_seconds"].get<double>(), (kNow - SlotMs(minute - 4, 1, 500)) / 1000.0);
  EXPECT_DOUBLE_EQ(s1["lag_seconds"].get<double>(), 249.75);

  EXPECT_EQ(j["shards"][100]["lag_seconds"], 0.0);
  EXPECT_EQ(j["shards"][100]["behind_minutes"], 0);

  const Json& never = j["shards"][2];
  EXPECT_EQ(never["fired_through"], nullptr);
  EXPECT_EQ(never["fired_through_minute"], nullptr);
  EXPECT_EQ(never["lag_seconds"], nullptr);
  EXPECT_EQ(never["debt_minutes"], 0);
  EXPECT_EQ(never["debt_first_minute"], nullptr);
  EXPECT_EQ(never["debt_node"], nullptr);
  EXPECT_EQ(never["debt_live"], false);
}

TEST_F(AdminServerTest, ShardsReportCatchUpDebtInTheirLag) {
  const int64_t minute = EpochMinuteOf(kNow);
  ledger_.SetFiredThrough(3, minute);                       // the watermark is current ...
  ledger_.AddDebt(3, MinuteRange{minute - 6, minute - 4});  // ... but three missed minutes are owed
  ASSERT_TRUE(ledger_.ClaimDebt(3, "node-c", 3000)->claimed);
  StartServer();
  Reply r = Get("/v1/shards");
  ASSERT_EQ(r.status, 200) << r.body;
  const Json j = r.json();
  const Json& s3 = j["shards"][3];
  EXPECT_EQ(s3["fired_through_minute"], minute);
  EXPECT_EQ(s3["behind_minutes"], 3);
  EXPECT_EQ(s3["debt_minutes"], 3);
  EXPECT_EQ(s3["debt_first_minute"], minute - 6);
  EXPECT_EQ(s3["debt_node"], "node-c");
  EXPECT_EQ(s3["debt_live"], true);
  EXPECT_DOUBLE_EQ(s3["lag_seconds"].get<double>(), (kNow - SlotMs(minute - 6, 3, 500)) / 1000.0);
}

TEST_F(AdminServerTest, RetryableStoreErrorsAre503) {
  ScriptedJobReader scripted;
  scripted.error = Status::Retryable("connection to PostgreSQL lost");
  FailingLedger ledger;
  StartServer({}, &scripted, &ledger);
  ExpectError(Get("/v1/jobs/x"), 503);
  ExpectError(Get("/v1/jobs/x/next"), 503);
  ExpectError(Get("/v1/jobs"), 503);
  ExpectError(Get("/v1/shards"), 503);
  EXPECT_NE(Get("/v1/jobs").json()["error"].get<std::string>().find("connection to PostgreSQL lost"),
            std::string::npos);
  scripted.error = Status::FailedPrecondition("schema mismatch");
  ExpectError(Get("/v1/jobs/x"), 500);
}

// A 500's text may name tables, statements or internals: the client gets only an id, and the log
// line with that id has the text.
TEST_F(AdminServerTest, InternalErrorsAnswerAnIdAndLogTheText) {
  std::ostringstream log;
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(
      std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  ScriptedJobReader scripted;
  StartServer({}, &scripted);
  std::set<std::string> ids;
  auto expect_opaque_500 = [&](const Reply& r, const std::string& secret) {
    ExpectError(r, 500);
    const Json j = Json::parse(r.body);
    EXPECT_EQ(j.size(), 2u) << r.body;
    EXPECT_EQ(j["error"], "internal error");
    ASSERT_TRUE(j["error_id"].is_string()) << r.body;
    const std::string id = j["error_id"];
    EXPECT_EQ(id.size(), 16u);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    EXPECT_EQ(r.body.find(secret), std::string::npos) << r.body;
    ids.insert(id);
    spdlog::default_logger()->flush();
    const std::string text = log.str();
    const size_t at = text.find("error_id=" + id);
    ASSERT_NE(at, std::string::npos) << text;
    EXPECT_NE(text.find(secret, at), std::string::npos) << text;
  };
  scripted.throw_what = "relation \"jobs_secret_7\" is broken";
  expect_opaque_500(Get("/v1/jobs/x"), "jobs_secret_7");
  scripted.throw_what.clear();
  scripted.error = Status::FailedPrecondition("schema mismatch in table secret_table_9");
  expect_opaque_500(Get("/v1/jobs/x"), "secret_table_9");
  expect_opaque_500(Get("/v1/jobs/y/next"), "secret_table_9");
  EXPECT_EQ(ids.size(), 3u);  // one id per failure
  spdlog::set_default_logger(previous);
}

TEST_F(AdminServerTest, UnknownRoutesAre404AndWritesAre405) {
  StartServer();
  ExpectError(Get("/nope"), 404);
  ExpectError(Get("/v1/jobz"), 404);
  ExpectError(Get("/v1/jobs/"), 404);
  Reply r = Wrap(client_->Post("/v1/jobs", "{}", "application/json"));
  ExpectError(r, 405);
  EXPECT_EQ(r.headers.find("Allow")->second, "GET, HEAD");
  ExpectError(Wrap(client_->Delete("/v1/jobs/abc")), 405);
  ExpectError(Wrap(client_->Put("/v1/shards", "{}", "application/json")), 405);
  ExpectError(Wrap(client_->Patch("/metrics", "x", "text/plain")), 405);
  ExpectError(Wrap(client_->Post("/elsewhere", "{}", "application/json")), 404);
  EXPECT_EQ(Wrap(client_->Head("/healthz")).status, 200);
}

// httplib refuses a method it does not know in the request line, before reading the headers. Kept
// alive, those headers were read as the next request, so the client's next request on the
// connection got a 400 (schemathesis: QUERY /v1/shards, then GET /v1/shards). Now an unknown
// method is a 405 (404 off the routes), and every request httplib could not read whole closes
// the connection after its answer.
TEST_F(AdminServerTest, ARequestHttplibCannotReadClosesTheConnectionAfterItsAnswer) {
  StartServer();
  const std::string rest = "Host: 127.0.0.1\r\nX-After-The-Request-Line: 1\r\n\r\n";
  {
    RawConnection conn(server_->port());
    ASSERT_TRUE(conn.Send("QUERY /v1/shards?x=1 HTTP/1.1\r\n" + rest));
    const RawConnection::Response r = conn.Read();
    EXPECT_EQ(r.status, 405) << r.head << r.body;
    EXPECT_NE(RawConnection::Lower(r.head).find("allow: get, head"), std::string::npos) << r.head;
    EXPECT_NE(RawConnection::Lower(r.head).find("connection: close"), std::string::npos) << r.head;
    EXPECT_TRUE(conn.ClosedByServer());
  }
  {
    RawConnection conn(server_->port());
    ASSERT_TRUE(conn.Send("FOO /elsewhere HTTP/1.1\r\n" + rest));
    EXPECT_EQ(conn.Read().status, 404);
    EXPECT_TRUE(conn.ClosedByServer());
  }
  {
    RawConnection conn(server_->port());
    ASSERT_TRUE(conn.Send("GET /healthz HTTP/1.7\r\n" + rest));
    const RawConnection::Response r = conn.Read();
    EXPECT_EQ(r.status, 400) << r.head << r.body;
    EXPECT_NE(r.body.find("bad request"), std::string::npos) << r.body;
    EXPECT_TRUE(conn.ClosedByServer());
  }
  {  // A request httplib reads whole keeps its connection: a 404, then a 200 on the same socket.
    RawConnection conn(server_->port());
    EXPECT_EQ(conn.Get("/nope").status, 404);
    EXPECT_EQ(conn.Get("/healthz").status, 200);
  }
}

TEST_F(AdminServerTest, TokenIsEnforcedOnANonLoopbackAddress) {
  store_.Put(Spec("j"));
  StartServer(Options("0.0.0.0:0", "s3cret-token"));
  for (const char* path :
       {"/v1/jobs", "/v1/jobs/j", "/v1/jobs/j/next", "/v1/shards", "/metrics", "/v1/unknown"}) {
    Reply r = Get(path);
    ExpectError(r, 401);
    EXPECT_TRUE(r.headers.count("WWW-Authenticate")) << path;
    ExpectError(Get(path, {{"Authorization", "Bearer wrong-token!"}}), 401);
    ExpectError(Get(path, {{"Authorization", "Bearer s3cret-toke"}}), 401);
    ExpectError(Get(path, {{"Authorization", "Basic s3cret-token"}}), 401);
    ExpectError(Get(path, {{"Authorization", "s3cret-token"}}), 401);
  }
  EXPECT_EQ(Get("/v1/jobs/j", {{"Authorization", "Bearer s3cret-token"}}).status, 200);
  EXPECT_EQ(Get("/v1/jobs", {{"Authorization", "bearer s3cret-token"}}).status, 200);
  EXPECT_EQ(Get("/v1/shards", {{"Authorization", "Bearer s3cret-token"}}).status, 200);
  EXPECT_EQ(Get("/metrics", {{"Authorization", "Bearer s3cret-token"}}).status, 200);
  // Probes stay open.
  EXPECT_EQ(Get("/healthz").status, 200);
  EXPECT_EQ(Get("/readyz").status, 200);
  // Writes are refused for everyone, but the caller must authenticate first.
  ExpectError(Wrap(client_->Post("/v1/jobs", "{}", "application/json")), 401);
}

TEST_F(AdminServerTest, TokenIsEnforcedOnLoopbackToo) {
  StartServer(Options("127.0.0.1:0", "t"));
  ExpectError(Get("/v1/shards"), 401);
  EXPECT_EQ(Get("/v1/shards", {{"Authorization", "Bearer t"}}).status, 200);
}

TEST_F(AdminServerTest, RefusesANonLoopbackAddressWithoutAToken) {
  for (const char* listen : {"0.0.0.0:0", "[::]:0", "10.1.2.3:8080", "example.com:8080"}) {
    AdminDeps deps = Deps();
    auto s = AdminServer::Start(Options(listen), deps);
    ASSERT_FALSE(s.ok()) << listen;
    EXPECT_EQ(s.status().code(), Status::Code::kInvalid);
    EXPECT_NE(s.status().message().find("token"), std::string::npos) << s.status().message();
    EXPECT_NE(s.status().message().find(listen), std::string::npos) << s.status().message();
  }
}

TEST_F(AdminServerTest, RefusesBadOptions) {
  AdminDeps deps = Deps();
  for (const char* listen : {"", "8080", "127.0.0.1", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:70000",
                             "::1:8080", "[::1]8080", ":8080"}) {
    auto s = AdminServer::Start(Options(listen), deps);
    ASSERT_FALSE(s.ok()) << listen;
    EXPECT_EQ(s.status().code(), Status::Code::kInvalid) << listen;
  }
  AdminDeps missing = deps;
  missing.readers = nullptr;
  EXPECT_FALSE(AdminServer::Start(Options("127.0.0.1:0"), missing).ok());
  EXPECT_FALSE(AdminServer::Start(Options("127.0.0.1:0", "", 0), deps).ok());
}

TEST_F(AdminServerTest, ReportsABusyPort) {
  StartServer();
  AdminDeps deps = Deps();
  auto second = AdminServer::Start(Options("127.0.0.1:" + std::to_string(server_->port())), deps);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Status::Code::kFailedPrecondition);
}

TEST_F(AdminServerTest, StartsAndStopsQuickly) {
  AdminDeps deps = Deps();
  for (int i = 0; i < 20; ++i) {
    auto s = AdminServer::Start(Options("127.0.0.1:0"), deps);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
  }
  for (const char* listen : {"localhost:0", "[::1]:0"}) {
    auto s = AdminServer::Start(Options(listen), deps);
    // ::1 may be unavailable in a container without IPv6; anything else must start.
    if (!s.ok()) {
      EXPECT_EQ(s.status().code(), Status::Code::kFailedPrecondition) << listen;
      continue;
    }
    EXPECT_GT((*s)->port(), 0);
  }
}

TEST(ListenAddressTest, ParsesHostAndPort) {
  auto a = ParseListenAddress("127.0.0.1:8080");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8080);
  a = ParseListenAddress("[::1]:0");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 0);
  a = ParseListenAddress("admin.internal:9000");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "admin.internal");
}

TEST(ListenAddressTest, KnowsLoopbackAddresses) {
  for (const char* h :
       {"127.0.0.1", "127.1.2.3", "127.255.255.255", "::1", "localhost", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(IsLoopbackHost(h)) << h;
  }
  for (const char* h : {"0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "126.0.0.1", "localhost.example.com",
                        "::ffff:10.0.0.1", "", "127.0.0.1.nip.io"}) {
    EXPECT_FALSE(IsLoopbackHost(h)) << h;
  }
}

TEST(Base64UrlTest, RoundTripsAndRejectsGarbage) {
  for (const std::string& s :
       {std::string(), std::string("a"), std::string("ab"), std::string("abc"), std::string("abcd"),
        std::string("job-42/x?y"), std::string("\xff\xfe\x00z", 4)}) {
    const std::string e = Base64UrlEncode(s);
    EXPECT_EQ(e.find_first_of("+/="), std::string::npos) << e;
    EXPECT_EQ(Base64UrlDecode(e), s);
  }
  EXPECT_EQ(Base64UrlEncode("job-42"), "am9iLTQy");
  EXPECT_EQ(Base64UrlDecode("a"), std::nullopt);
  EXPECT_EQ(Base64UrlDecode("am9i+TQy"), std::nullopt);
  EXPECT_EQ(Base64UrlDecode("am9iLTQy=="), std::nullopt);
  EXPECT_EQ(Base64UrlDecode("YR"), std::nullopt);  // non-zero leftover bits: not a canonical encoding
  EXPECT_EQ(Base64UrlDecode("YQ"), "a");
}

TEST_F(AdminServerTest, ExecutionsRouteIs404WithoutAStore) {
  StartServer();
  ExpectError(Get("/v1/jobs/h/executions"), 404);
}

TEST_F(AdminServerTest, ExecutionsPaginateAndJobsShowTheLastOutcome) {
  ScriptedExecutionStore executions;
  executions_ = &executions;
  store_.Put(Spec("h"));
  StartServer();
  Reply r = Get("/v1/jobs/h/executions?limit=2");
  ASSERT_EQ(r.status, 200) << r.body;
  Json page = r.json();
  ASSERT_EQ(page["executions"].size(), 2u);
  EXPECT_EQ(page["executions"][0]["status"], "failed");
  EXPECT_EQ(page["executions"][0]["scheduledFor"], "2026-11-22T13:00:32.500Z");
  int pages = 1;
  size_t total = 2;
  while (!page["next_cursor"].is_null() && pages < 10) {
    r = Get("/v1/jobs/h/executions?limit=2&cursor=" + page["next_cursor"].get<std::string>());
    ASSERT_EQ(r.status, 200) << r.body;
    page = r.json();
    total += page["executions"].size();
    ++pages;
  }
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(total, 5u);
  ExpectError(Get("/v1/jobs/h/executions?cursor=%%%"), 400);
  ExpectError(Get("/v1/jobs/h/executions?cursor=Zm9v"), 400);  // "foo": decodes, but the store refuses it
  ExpectError(Get("/v1/jobs/h/executions?limit=0"), 400);
  ExpectError(Get("/v1/jobs/h/executions?limit=1001"), 400);
  ExpectError(Get("/v1/jobs/h/executions?bogus=1"), 400);

  Json job = Get("/v1/jobs/h").json();
  EXPECT_EQ(job["lastOutcome"]["status"], "failed");
  EXPECT_EQ(job["lastOutcome"]["error"], "HTTP 503");
  EXPECT_EQ(job["consecutiveFailures"], 3);
  EXPECT_EQ(job["totalSucceeded"], 9);
  EXPECT_EQ(job["totalFailed"], 4);
}

TEST_F(AdminServerTest, OneShotJobShowsItsTimesAndOneNextInstant) {
  JobSpec s = Spec("once");
  s.interval_minutes = 0;
  s.offset_minutes = 0;
  s.run_at = kNow + 120'000;
  s.run_minute = kNow / 60'000 + 2;
  s.scheduled_for_ms = SlotMs(s.run_minute, s.shard, 500);
  store_.Put(s);
  StartServer();
  Json job = Get("/v1/jobs/once").json();
  EXPECT_EQ(job["runAt"], FormatIsoTime(kNow + 120'000));
  EXPECT_EQ(job["scheduledFor"], FormatIsoTime(s.scheduled_for_ms));
  EXPECT_EQ(job["intervalMinutes"], 0);
  Json next = Get("/v1/jobs/once/next?n=5").json();
  ASSERT_EQ(next["next"].size(), 1u);
  EXPECT_EQ(next["next"][0], FormatIsoTime(s.scheduled_for_ms));
}

// Issue 33 §4: after `belfry reshard --to 240` the database's layout record, not the node's
// configured shard_count (120 here, tick 500 ms), says which shard and tick fire a job: /next,
// the job view, /v1/load and /v1/shards answer as the firer fires (shard s at s * 250 ms).
TEST_F(AdminServerTest, SlotsLoadAndLagFollowTheLayoutRecordNotTheConfiguredShardCount) {
  ShardLayout resharded;  // 120 -> 240 done: stable at 240
  resharded.from = 240;
  ledger_.SetLayout(resharded);
  const int64_t minute = EpochMinuteOf(kNow);  // 13:37; now is 10.25 s into it
  store_.Put(Spec("on-200", "o", 1, 0, 200));  // a job of a shard the reshard added
  store_.Put(Spec("on-119", "o", 1, 0, 119));
  LoadGroups groups;
  for (int32_t shard : {30, 200}) {
    LoadGroup g;
    g.shard = shard;
    g.interval_minutes = 1;
    g.jobs = 1;
    groups.groups.push_back(g);
  }
  store_.SetLoadGroups(groups);
  ledger_.SetFiredThrough(30, minute - 1);   // slot 13:37:07.500 (13:37:15 at 120 shards): due
  ledger_.SetFiredThrough(200, minute - 1);  // slot 13:37:50: not yet due
  StartServer();

  Json r = Get("/v1/jobs/on-200/next?n=2").json();
  EXPECT_EQ(r["next"], Json({"2026-11-22T13:37:50.000Z", "2026-11-22T13:38:50.000Z"})) << r.dump();
  r = Get("/v1/jobs/on-119/next?n=1").json();
  EXPECT_EQ(r["next"], Json({"2026-11-22T13:37:29.750Z"})) << r.dump();
  r = Get("/v1/jobs/on-119").json();
  ASSERT_FALSE(r["nextFires"].empty()) << r.dump();
  EXPECT_EQ(r["nextFires"][0]["at"], "2026-11-22T13:37:29.750Z");

  Reply load = Get("/v1/load?from=2026-11-22T13:40:00Z&to=2026-11-22T13:41:00Z&shards=true");
  ASSERT_EQ(load.status, 200) << load.body;
  r = load.json();
  EXPECT_EQ(r["shardCount"], 240);
  EXPECT_EQ(r["tickMs"], 250);
  EXPECT_EQ(r["total"], 2);  // shard 200's job is not dropped
  ASSERT_EQ(r["minutes"].size(), 1u);
  ASSERT_EQ(r["minutes"][0]["shards"].size(), 240u);
  EXPECT_EQ(r["minutes"][0]["shards"][30], 1);
  EXPECT_EQ(r["minutes"][0]["shards"][200], 1);

  r = Get("/v1/shards").json();
  std::map<int, Json> by_shard;
  for (const Json& s : r["shards"]) by_shard[s["shard"].get<int>()] = s;
  ASSERT_TRUE(by_shard.count(30) && by_shard.count(200)) << r.dump();
  EXPECT_EQ(by_shard[30]["behind_minutes"], 1);
  EXPECT_DOUBLE_EQ(by_shard[30]["lag_seconds"].get<double>(), 2.75);
  EXPECT_EQ(by_shard[200]["behind_minutes"], 0);
  EXPECT_EQ(by_shard[200]["lag_seconds"], 0.0);
}

// Issue 33 §5: a node runs one load projection at a time (each up to admin.load_max_groups groups), so
// its memory does not grow with its 64 connection workers: another request meanwhile gets 503.
TEST_F(AdminServerTest, OneLoadProjectionAtATime) {
  store_.SetLoadGroups(LoadGroups{});
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> reads{0};
  store_.during_load_read = [&] {
    if (reads.fetch_add(1) == 0) {
      entered.set_value();
      released.wait();
    }
  };
  AdminDeps deps = Deps();
  // Two sessions, so that the second request is not turned away for want of one.
  const ReadSession session{&store_, &store_, &ledger_, nullptr};
  pools_.push_back(
      std::make_unique<ReaderPool>(std::vector<ReadSession>{session, session}, std::chrono::milliseconds(2000)));
  deps.readers = pools_.back().get();
  AdminServerOptions options;
  options.listen = "127.0.0.1:0";
  auto started = AdminServer::Start(options, deps);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  server_ = std::move(*started);
  client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  client_->set_read_timeout(10);

  Reply first;
  std::thread t([&] {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(10);
    first = Wrap(c.Get("/v1/load"));
  });
  entered.get_future().wait();  // the first projection is reading
  Reply second = Get("/v1/load");
  release.set_value();
  t.join();
  EXPECT_EQ(second.status, 503) << second.body;
  EXPECT_NE(second.body.find("another load projection is running"), std::string::npos) << second.body;
  EXPECT_FALSE(second.headers.find("Retry-After") == second.headers.end());
  EXPECT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(Get("/v1/load").status, 200);  // and the next one runs
}

}  // namespace
}  // namespace belfry

namespace belfry {
namespace {

// POST /v1/commands (docs/console.md) over a scripted CommandSubmitter: what it publishes, and
// each answer. The Kafka path itself is the integration test's (http_commands_itest).
class ScriptedSubmitter final : public CommandSubmitter {
 public:
  CommandSubmission Submit(const std::string& key, const std::string& value, const std::string& actor,
                           std::chrono::milliseconds wait) override {
    std::lock_guard<std::mutex> lock(mu);
    calls.push_back({key, value, actor, wait.count()});
    return next;
  }
  struct Call {
    std::string key, value, actor;
    int64_t wait_ms = 0;
  };
  std::mutex mu;
  std::vector<Call> calls;
  CommandSubmission next;
};

constexpr std::string_view kSecret = "0123456789abcdef0123456789abcdef-secret";

class CommandRouteTest : public AdminServerTest {
 protected:
  void StartWithWrites(AdminServerOptions options = {}) {
    options.write_token_secret = std::string(kSecret);
    commands_ = &submitter_;
    StartServer(options);
  }
  std::string Token(const std::string& actor = "ana@ops", int64_t ttl_ms = 3'600'000, EpochMs now = kNow) {
    return MintWriteToken(kSecret, actor, now, ttl_ms);
  }
  Reply Post(const std::string& body, const std::string& token, const std::string& path = "/v1/commands",
             const std::string& type = "application/json") {
    httplib::Headers h;
    if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
    return Wrap(client_->Post(path, h, body, type));
  }
  ScriptedSubmitter submitter_;
};

constexpr char kPause[] = R"({"op":"pause","id":"job-1","reason":"carrier outage"})";

TEST_F(CommandRouteTest, AnAppliedCommandAnswers200WithItsOutcomeAndIsPublishedAsItCameUnderTheTokensActor) {
  StartWithWrites();
  submitter_.next.partition = 3;
  submitter_.next.offset = 41;
  submitter_.next.outcome = R"({"id":"job-1","op":"pause","status":"applied","error":null,"partition":3,"offset":41})";
  Reply r = Post(kPause, Token("ana@ops"));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["status"], "applied");
  EXPECT_EQ(r.json()["offset"], 41);
  ASSERT_EQ(submitter_.calls.size(), 1u);
  EXPECT_EQ(submitter_.calls[0].key, "job-1");
  EXPECT_EQ(submitter_.calls[0].value, kPause);  // byte for byte
  EXPECT_EQ(submitter_.calls[0].actor, "ana@ops");
  EXPECT_EQ(submitter_.calls[0].wait_ms, 10'000);  // the default admin.command_wait
}

TEST_F(CommandRouteTest, ARejectedCommandIs422AndOneWithoutAnOutcomeInTimeIs202WithItsPosition) {
  StartWithWrites();
  submitter_.next.outcome = R"({"id":"job-1","op":"unknown","status":"rejected","error":"unsupported_interval: 7"})";
  Reply r = Post(kPause, Token());
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(r.json()["status"], "rejected");

  submitter_.next.outcome.reset();
  submitter_.next.partition = 2;
  submitter_.next.offset = 9;
  r = Post(kPause, Token(), "/v1/commands?wait_ms=0");
  EXPECT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(r.json(), Json({{"id", "job-1"}, {"status", "pending"}, {"partition", 2}, {"offset", 9}}));
  EXPECT_EQ(submitter_.calls.back().wait_ms, 0);

  submitter_.next.status = Status::Retryable("broker down");
  r = Post(kPause, Token());
  ExpectError(r, 503);
  EXPECT_NE(r.json()["error"].get<std::string>().find("broker down"), std::string::npos);
  EXPECT_TRUE(r.headers.contains("Retry-After"));
}

TEST_F(CommandRouteTest, MissingWrongAndExpiredWriteTokensAre401AndSayWhyAndNothingIsPublished) {
  StartWithWrites();
  Reply r = Post(kPause, "");
  ExpectError(r, 401);
  EXPECT_NE(r.json()["error"].get<std::string>().find("write token"), std::string::npos);
  EXPECT_TRUE(r.headers.contains("WWW-Authenticate"));

  r = Post(kPause, MintWriteToken("another-secret-another-secret-another", "ana", kNow, 60'000));
  ExpectError(r, 401);
  EXPECT_NE(r.json()["error"].get<std::string>().find("signature"), std::string::npos);

  // Minted two hours ago for one hour: expired an hour ago by the node's clock.
  r = Post(kPause, Token("ana", 3'600'000, kNow - 7'200'000));
  ExpectError(r, 401);
  EXPECT_NE(r.json()["error"].get<std::string>().find("expired at 2026-11-22T12:37:10"), std::string::npos)
      << r.body;
  EXPECT_TRUE(submitter_.calls.empty());
}

TEST_F(CommandRouteTest, WritesAreOffWithoutASecretAnd403) {
  commands_ = &submitter_;
  StartServer();  // no write_token_secret
  Reply r = Post(kPause, Token());
  ExpectError(r, 403);
  EXPECT_NE(r.json()["error"].get<std::string>().find("admin.write_token_secret"), std::string::npos);
  EXPECT_TRUE(submitter_.calls.empty());
}

TEST_F(CommandRouteTest, ABodyThatIsNotOneJsonCommandWithAnIdAndNoActorIsRefusedBeforePublishing) {
  StartWithWrites();
  ExpectError(Post(kPause, Token(), "/v1/commands", "text/plain"), 415);
  ExpectError(Post("[1,2]", Token()), 400);
  ExpectError(Post("{\"op\":", Token()), 400);
  ExpectError(Post(R"({"op":"pause"})", Token()), 400);
  ExpectError(Post(R"({"op":"pause","id":7})", Token()), 400);
  Reply r = Post(R"({"op":"pause","id":"job-1","actor":"someone-else"})", Token());
  ExpectError(r, 400);
  EXPECT_NE(r.json()["error"].get<std::string>().find("actor"), std::string::npos);
  ExpectError(Post(kPause, Token(), "/v1/commands?wait_ms=60001"), 400);
  ExpectError(Post(kPause, Token(), "/v1/commands?bogus=1"), 400);
  EXPECT_TRUE(submitter_.calls.empty());
  // application/json with parameters is JSON too.
  submitter_.next.outcome = R"({"status":"applied"})";
  EXPECT_EQ(Post(kPause, Token(), "/v1/commands", "application/json; charset=utf-8").status, 200);
}

// The console's files (docs/console.md): served without a token, with a strict CSP, only from the
// top level of /ui/.
TEST_F(AdminServerTest, TheConsoleIsServedUnderUiWithItsSecurityHeaders) {
  AdminServerOptions options;
  options.token = "read-token";
  StartServer(options);
  Reply r = Get("/ui/");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
  EXPECT_NE(r.body.find("console.js"), std::string::npos);
  ASSERT_TRUE(r.headers.contains("Content-Security-Policy"));
  EXPECT_EQ(r.headers.find("Content-Security-Policy")->second, std::string(kConsoleSecurityPolicy));
  EXPECT_EQ(r.headers.find("X-Content-Type-Options")->second, "nosniff");
  EXPECT_EQ(Get("/ui/console.js").content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(Get("/ui/console.css").content_type, "text/css; charset=utf-8");
  Reply moved = Get("/ui");
  EXPECT_EQ(moved.status, 301);
  EXPECT_EQ(moved.headers.find("Location")->second, "/ui/");
  ExpectError(Get("/ui/nope.js"), 404);
  ExpectError(Get("/ui/.hidden"), 404);
  ExpectError(Get("/ui/%2e%2e%2fREADME.md"), 404);
  EXPECT_EQ(Get("/ui/a/b").status, 404);
}

TEST_F(CommandRouteTest, AValidWriteTokenAlsoAdmitsTheReadsAndOtherMethodsOnTheRouteAre405) {
  AdminServerOptions options;
  options.token = "read-token";
  StartWithWrites(options);
  EXPECT_EQ(Get("/v1/shards").status, 401);
  EXPECT_EQ(Get("/v1/shards", {{"Authorization", "Bearer read-token"}}).status, 200);
  EXPECT_EQ(Get("/v1/shards", {{"Authorization", "Bearer " + Token()}}).status, 200);
  EXPECT_EQ(Get("/v1/shards", {{"Authorization", "Bearer " + Token("ana", 1000, kNow - 5000)}}).status, 401);
  // The read token does not write.
  ExpectError(Post(kPause, "read-token"), 401);
  Reply r = Get("/v1/commands", {{"Authorization", "Bearer read-token"}});
  ExpectError(r, 405);
  EXPECT_EQ(r.headers.find("Allow")->second, "POST");
}

}  // namespace
}  // namespace belfry
