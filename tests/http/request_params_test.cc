#include "http/request_params.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <string>
#include <vector>

#include "core/base64url.h"

namespace belfry {
namespace {

httplib::Request RequestWith(std::initializer_list<std::pair<std::string, std::string>> params) {
  httplib::Request req;
  for (const auto& [k, v] : params) req.params.emplace(k, v);
  return req;
}

TEST(RequestParamsTest, PercentDecodingIsStrict) {
  EXPECT_EQ(PercentDecode("a%2Fb%41+c"), "a/bA+c");
  EXPECT_EQ(PercentDecode("%e2%82%ac"), "\xe2\x82\xac");
  EXPECT_EQ(PercentDecode("%"), std::nullopt);
  EXPECT_EQ(PercentDecode("%4"), std::nullopt);
  EXPECT_EQ(PercentDecode("%zz"), std::nullopt);
}

TEST(RequestParamsTest, RawQueryValuesKeepEveryEqualsSign) {
  EXPECT_EQ(RawQueryValues("/v1/jobs?label=team%3Dx&owner=o&label=a=b", "label"),
            (std::vector<std::string>{"team=x", "a=b"}));
  EXPECT_EQ(RawQueryValues("/v1/jobs", "label"), std::vector<std::string>{});
  EXPECT_EQ(RawQueryValues("/v1/jobs?label=%zz", "label"), std::nullopt);
}

TEST(RequestParamsTest, PathIdsAreDecodedStorableAndNotEmpty) {
  std::string id;
  EXPECT_EQ(DecodePathId("a%2Fnext", "job", &id), "");
  EXPECT_EQ(id, "a/next");
  EXPECT_EQ(DecodePathId("", "job", &id), "the job id in the path is empty");
  EXPECT_EQ(DecodePathId("%zz", "job", &id), "the job id in the path is not validly percent-encoded");
  EXPECT_EQ(DecodePathId("a%00b", "bulk operation", &id),
            "the bulk operation id in the path is not valid UTF-8 or contains a NUL byte");
  EXPECT_EQ(DecodePathId("%ff", "job", &id), "the job id in the path is not valid UTF-8 or contains a NUL byte");
}

TEST(RequestParamsTest, PageLimitAndCursorFollowThePaginationRule) {
  int32_t limit = 0;
  EXPECT_EQ(PageLimitParam(RequestWith({}), kJobListPage, 1000, &limit), "");
  EXPECT_EQ(limit, 100);
  EXPECT_EQ(PageLimitParam(RequestWith({}), kJobListPage, 50, &limit), "");
  EXPECT_EQ(limit, 50);  // the default never exceeds the maximum
  EXPECT_EQ(PageLimitParam(RequestWith({{"limit", "7"}}), kExecutionPage, 1000, &limit), "");
  EXPECT_EQ(limit, 7);
  EXPECT_EQ(PageLimitParam(RequestWith({{"limit", "0"}}), kExecutionPage, 1000, &limit),
            "limit must be an integer in 1..1000, got \"0\"");

  std::string position;
  EXPECT_EQ(PageCursorParam(RequestWith({}), &position), "");
  EXPECT_EQ(position, "");
  EXPECT_EQ(PageCursorParam(RequestWith({{"cursor", Base64UrlEncode("job-9")}}), &position), "");
  EXPECT_EQ(position, "job-9");
  EXPECT_EQ(PageCursorParam(RequestWith({{"cursor", "%%%"}}), &position), std::string(kInvalidCursorMessage));
}

TEST(RequestParamsTest, UnknownParametersAreNamed) {
  EXPECT_EQ(CheckParams(RequestWith({{"limit", "1"}}), {"limit", "cursor"}), "");
  EXPECT_EQ(CheckParams(RequestWith({{"x", "1"}}), {"limit", "cursor"}),
            "unknown query parameter \"x\" (expected: limit, cursor)");
  int64_t n = 3;
  EXPECT_EQ(IntParam(RequestWith({{"n", "abc"}}), "n", 1, 10, &n), "n must be an integer in 1..10, got \"abc\"");
  EXPECT_EQ(n, 3);
}

}  // namespace
}  // namespace belfry
