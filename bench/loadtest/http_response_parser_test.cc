// Hermetic tests of `belfry-loadtest api`'s HTTP response parser and request mix.
#include "loadtest/http_response_parser.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "loadtest/http_request_mix.h"
#include "loadtest/job_command_factory.h"

namespace belfry::loadtest {
namespace {

using State = HttpResponseParser::State;

// Feeds `wire` in pieces of `step` bytes; returns the final state and the bytes used.
State FeedInSteps(HttpResponseParser& p, std::string_view wire, size_t step, size_t* used_total) {
  State state = State::kIncomplete;
  *used_total = 0;
  while (*used_total < wire.size() && state == State::kIncomplete) {
    const std::string_view piece = wire.substr(*used_total, step);
    *used_total += p.Feed(piece, &state);
  }
  return state;
}

TEST(HttpResponseParserTest, ContentLengthInAnyPieces) {
  const std::string wire =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\ncontent-length: 15\r\n"
      "Keep-Alive: timeout=2, max=5\r\n\r\n{\"status\":\"ok\"}";
  for (size_t step : {1, 2, 3, 7, 64, 4096}) {
    HttpResponseParser p;
    p.Reset();
    size_t used = 0;
    ASSERT_EQ(FeedInSteps(p, wire, step, &used), State::kComplete) << step << ": " << p.error();
    EXPECT_EQ(used, wire.size());
    EXPECT_EQ(p.status(), 200);
    EXPECT_EQ(p.body(), "{\"status\":\"ok\"}");
    EXPECT_FALSE(p.connection_close());
    EXPECT_FALSE(p.chunked());
  }
}

TEST(HttpResponseParserTest, StopsAtTheEndOfTheResponse) {
  const std::string first = "HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}";
  HttpResponseParser p;
  p.Reset();
  State state;
  EXPECT_EQ(p.Feed(first + "HTTP/1.1 200", &state), first.size());
  EXPECT_EQ(state, State::kComplete);
  EXPECT_EQ(p.status(), 404);
  p.Reset();
  EXPECT_TRUE(p.empty());
  EXPECT_EQ(p.Feed("HTTP/1.1 204 No Content\r\n\r\n", &state), 27u);
  EXPECT_EQ(state, State::kComplete);
  EXPECT_EQ(p.status(), 204);
  EXPECT_EQ(p.body(), "");
}

TEST(HttpResponseParserTest, ConnectionCloseAndRetryAfter) {
  HttpResponseParser p;
  p.Reset();
  State state;
  p.Feed(
      "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After:  5 \r\nContent-Length: "
      "0\r\n\r\n",
      &state);
  ASSERT_EQ(state, State::kComplete);
  EXPECT_EQ(p.status(), 503);
  EXPECT_TRUE(p.connection_close());
  EXPECT_EQ(p.retry_after(), "5");

  p.Reset();  // HTTP/1.0 closes unless it says keep-alive
  p.Feed("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", &state);
  EXPECT_TRUE(p.connection_close());
  p.Reset();
  p.Feed("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", &state);
  EXPECT_FALSE(p.connection_close());
}

TEST(HttpResponseParserTest, Chunked) {
  const std::string wire =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\nA;ext=1\r\n, world!!!\r\n0\r\nX-Trailer: 1\r\n\r\n";
  for (size_t step : {1, 5, 4096}) {
    HttpResponseParser p;
    p.Reset();
    size_t used = 0;
    ASSERT_EQ(FeedInSteps(p, wire, step, &used), State::kComplete) << step << ": " << p.error();
    EXPECT_EQ(used, wire.size());
    EXPECT_TRUE(p.chunked());
    EXPECT_EQ(p.body(), "hello, world!!!");
  }
}

TEST(HttpResponseParserTest, BodyUntilTheEndOfTheConnection) {
  HttpResponseParser p;
  p.Reset();
  State state;
  p.Feed("HTTP/1.1 200 OK\r\n\r\nabc", &state);
  EXPECT_EQ(state, State::kIncomplete);
  EXPECT_TRUE(p.connection_close());
  EXPECT_EQ(p.FinishOnEof(), State::kComplete);
  EXPECT_EQ(p.body(), "abc");
}

TEST(HttpResponseParserTest, Errors) {
  for (const char* wire :
       {"HTTP/2 200 OK\r\n\r\n", "HTTP/1.1 20x OK\r\n\r\n", "SMTP ready\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"}) {
    HttpResponseParser p;
    p.Reset();
    State state;
    p.Feed(wire, &state);
    EXPECT_EQ(state, State::kError) << wire;
    EXPECT_FALSE(p.error().empty());
  }
  HttpResponseParser p;  // closed half-way
  p.Reset();
  State state;
  p.Feed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", &state);
  EXPECT_EQ(p.FinishOnEof(), State::kError);
  p.Reset();
  EXPECT_EQ(p.FinishOnEof(), State::kError);
  EXPECT_EQ(p.error(), "connection closed before the response");
}

TEST(ApiRouteMixTest, ParsesAndPicksByWeight) {
  const ApiRouteMix mix = ApiRouteMix::Parse(kDefaultApiMix);
  EXPECT_EQ(mix.total(), 100u);
  EXPECT_EQ(mix.ToString(), "get=70,executions=20,owners=10");
  EXPECT_EQ(mix.Pick(0), ApiRoute::kGetJob);
  EXPECT_EQ(mix.Pick(69), ApiRoute::kGetJob);
  EXPECT_EQ(mix.Pick(70), ApiRoute::kExecutions);
  EXPECT_EQ(mix.Pick(89), ApiRoute::kExecutions);
  EXPECT_EQ(mix.Pick(90), ApiRoute::kListByOwner);
  EXPECT_EQ(mix.Pick(99), ApiRoute::kListByOwner);
  EXPECT_EQ(ApiRouteMix::Parse("healthz=1").Pick(0), ApiRoute::kHealthz);
  EXPECT_EQ(ApiRouteMix::Parse("get=0,missing=3").ToString(), "missing=3");
  for (const char* bad : {"", "get=0", "get", "get=x", "gets=1", "get=1,get=2", "get=-1"}) {
    EXPECT_THROW(ApiRouteMix::Parse(bad), std::invalid_argument) << bad;
  }
}

TEST(HttpRequestMixTest, TargetsNameSeededJobsAndOwners) {
  JobCommandSpec spec;
  spec.id_prefix = "lt a/";
  spec.owners = 7;
  const JobCommandFactory factory(spec);
  ApiRequestOptions options;
  options.first = 1000;
  options.jobs = 50;
  const HttpRequestMix mix(factory, ApiRouteMix::Parse("get=1,executions=1,owners=1,missing=1"), options);

  const ApiRequest get = mix.For(ApiRoute::kGetJob, 1003);
  EXPECT_EQ(get.target, "/v1/jobs/lt%20a%2F0000001003");
  EXPECT_EQ(get.expect_in_body, "\"id\":\"lt a/0000001003\"");
  EXPECT_EQ(get.expected_status, 200);
  EXPECT_EQ(mix.For(ApiRoute::kExecutions, 1003).target, "/v1/jobs/lt%20a%2F0000001003/executions?limit=20");
  EXPECT_EQ(mix.For(ApiRoute::kMissingJob, 1003).expected_status, 404);

  // The owner of job n is the one the seed wrote into job n's upsert.
  std::mt19937_64 rng(1);
  for (uint64_t n = 1000; n < 1050; ++n) {
    const std::string upsert = factory.Upsert(n, 0, false, rng);
    EXPECT_NE(upsert.find("\"owner\":\"" + mix.OwnerOf(n) + "\""), std::string::npos) << upsert;
    const ApiRequest list = mix.For(ApiRoute::kListByOwner, n);
    EXPECT_EQ(list.target, "/v1/jobs?owner=" + mix.OwnerOf(n) + "&limit=50");
    EXPECT_EQ(list.expect_in_body, "\"owner\":\"" + mix.OwnerOf(n) + "\"");
  }

  // Drawn requests stay in the seeded range, and missing ones outside it.
  int seen[kApiRouteCount] = {};
  for (int i = 0; i < 4000; ++i) {
    const ApiRequest r = mix.Next(rng);
    ++seen[static_cast<size_t>(r.route)];
    if (r.route == ApiRoute::kGetJob || r.route == ApiRoute::kMissingJob) {
      uint64_t n = 0;
      const std::string id = r.target.substr(std::string("/v1/jobs/lt%20a%2F").size());
      ASSERT_TRUE(factory.NumberOf("lt a/" + id, &n)) << r.target;
      if (r.route == ApiRoute::kGetJob) {
        EXPECT_TRUE(n >= 1000 && n < 1050) << n;
      } else {
        EXPECT_TRUE(n >= 1050 && n < 1100) << n;
      }
    }
  }
  for (size_t r = 0; r < 4; ++r) EXPECT_GT(seen[r], 800) << r;
  EXPECT_EQ(seen[static_cast<size_t>(ApiRoute::kHealthz)], 0);
}

TEST(HttpRequestMixTest, Encoding) {
  EXPECT_EQ(PercentEncode("aZ09-._~"), "aZ09-._~");
  EXPECT_EQ(PercentEncode("a/b?c d%é"), "a%2Fb%3Fc%20d%25%C3%A9");
  EXPECT_EQ(JsonEscape("a\"b\\c\n\x01"), "a\\\"b\\\\c\\n\\u0001");
}

}  // namespace
}  // namespace belfry::loadtest
