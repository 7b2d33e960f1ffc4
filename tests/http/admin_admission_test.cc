#include "http/admin_admission.h"

#include <gtest/gtest.h>

namespace belfry {
namespace {

TEST(AdminAdmissionTest, TheTokenGuardsMetricsAndV1Only) {
  for (const char* path : {"/metrics", "/v1", "/v1/jobs", "/v1/shards", "/v1/nope"}) {
    EXPECT_TRUE(RequiresAuth(path)) << path;
  }
  for (const char* path : {"/healthz", "/readyz", "/", "/v10", "/metricsx"}) {
    EXPECT_FALSE(RequiresAuth(path)) << path;
  }
}

TEST(AdminAdmissionTest, BearerTokenMatchesTheSchemeInAnyCaseAndTheTokenExactly) {
  EXPECT_TRUE(BearerTokenMatches("Bearer s3cret", "s3cret"));
  EXPECT_TRUE(BearerTokenMatches("bEaReR   s3cret  ", "s3cret"));
  EXPECT_FALSE(BearerTokenMatches("Bearer s3cre", "s3cret"));
  EXPECT_FALSE(BearerTokenMatches("Bearer s3cretx", "s3cret"));
  EXPECT_FALSE(BearerTokenMatches("Basic s3cret", "s3cret"));
  EXPECT_FALSE(BearerTokenMatches("", "s3cret"));
  EXPECT_FALSE(BearerTokenMatches("Bearer ", "s3cret"));
  EXPECT_TRUE(BearerTokenMatches("", ""));  // no token configured: everyone is in
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
  EXPECT_FALSE(ConstantTimeEquals("ab", "abc"));
}

TEST(AdminAdmissionTest, ProbesAreHealthzAndReadyzWhateverTheirQuery) {
  EXPECT_TRUE(IsProbePath("/healthz"));
  EXPECT_TRUE(IsProbePath("/readyz?verbose=1"));
  EXPECT_FALSE(IsProbePath("/metrics"));
  EXPECT_FALSE(IsProbePath("/healthz/x"));
}

}  // namespace
}  // namespace belfry
