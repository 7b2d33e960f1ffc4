#include "http/write_token.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/base64url.h"

namespace belfry {
namespace {

constexpr std::string_view kSecret = "0123456789abcdef0123456789abcdef";
constexpr EpochMs kNow = 1'795'352'230'000;  // 2026-11-22T12:57:10Z

std::string Message(const StatusOr<WriteTokenClaims>& r) { return r.ok() ? "" : r.status().message(); }

TEST(WriteTokenTest, AMintedTokenVerifiesUntilItExpiresAndCarriesItsActor) {
  const std::string token = MintWriteToken(kSecret, "ana@ops", kNow, 8 * 3'600'000);
  StatusOr<WriteTokenClaims> c = VerifyWriteToken(token, kSecret, kNow + 1000);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->actor, "ana@ops");
  EXPECT_EQ(c->issued_ms, kNow);
  EXPECT_EQ(c->expires_ms, kNow + 8 * 3'600'000);
  EXPECT_TRUE(VerifyWriteToken(token, kSecret, kNow + 8 * 3'600'000 - 1).ok());
  StatusOr<WriteTokenClaims> late = VerifyWriteToken(token, kSecret, kNow + 8 * 3'600'000);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().reason(), "write_token");
  EXPECT_NE(Message(late).find("expired at 2026-11-22T20:57:10.000Z"), std::string::npos) << Message(late);
}

// JWTs made elsewhere: Python's hmac and hashlib over the same secret (the header's members in
// another order in the first). The first verifies; the others are signed right but lack a claim.
TEST(WriteTokenTest, ATokenFromAnotherJwtLibraryVerifiesAndMissingClaimsAreNamed) {
  StatusOr<WriteTokenClaims> c = VerifyWriteToken(
      "eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9."
      "eyJzdWIiOiJjaUBidWlsZCIsImlhdCI6MTc5NTM1MjIzMCwiZXhwIjoxNzk1MzU1ODMwLCJzY29wZSI6ImJlbGZyeTp3cml0ZSJ9."
      "YPB-1myO1yfahP4IzRmVzntohnvYfY8pZQBejwNV01Y",
      kSecret, kNow);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->actor, "ci@build");
  EXPECT_EQ(c->expires_ms, 1'795'355'830'000);

  const std::string header = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.";
  struct Case {
    const char* rest;
    const char* says;
  };
  for (const Case& k : {
           Case{"eyJzdWIiOiJjaUBidWlsZCIsImV4cCI6MTc5NTM1NTgzMH0.iZz2LyIWaklZeHE7cH4zhbbgtYzlnt8e-pihYVkUWQ0",
                "scope"},
           Case{"eyJleHAiOjE3OTUzNTU4MzAsInNjb3BlIjoiYmVsZnJ5OndyaXRlIn0.gkdUHRkNK6Ac9g9hNoSG6oeT6FJqjWr_o58p23jmXts",
                "actor"},
           Case{"eyJzdWIiOiJjaUBidWlsZCIsInNjb3BlIjoiYmVsZnJ5OndyaXRlIn0.BiAI82nCOXw1hOAmI477B3U8et5E_5XEyx8guSDdbAE",
                "expiry"},
           Case{"eyJzdWIiOiJjaUBidWlsZCIsImV4cCI6InNvb24iLCJzY29wZSI6ImJlbGZyeTp3cml0ZSJ9."
                "-YHsZp0PuEteSP7kLJyZ4reiGJ9MkBWjH011HqeKP74",
                "expiry"},
       }) {
    StatusOr<WriteTokenClaims> r = VerifyWriteToken(header + k.rest, kSecret, kNow);
    ASSERT_FALSE(r.ok()) << k.says;
    EXPECT_NE(Message(r).find(k.says), std::string::npos) << Message(r);
  }
}

TEST(WriteTokenTest, AWrongSecretATamperedClaimAndAnotherAlgorithmAreRefused) {
  const std::string token = MintWriteToken(kSecret, "ana", kNow, 60'000);
  EXPECT_NE(Message(VerifyWriteToken(token, "another secret of thirty-two bytes!", kNow)).find("signature"),
            std::string::npos);

  // The claims re-encoded with another actor, the signature kept.
  const size_t a = token.find('.');
  const size_t b = token.rfind('.');
  nlohmann::json claims = nlohmann::json::parse(*Base64UrlDecode(token.substr(a + 1, b - a - 1)));
  claims["sub"] = "root";
  const std::string tampered = token.substr(0, a + 1) + Base64UrlEncode(claims.dump()) + token.substr(b);
  EXPECT_NE(Message(VerifyWriteToken(tampered, kSecret, kNow)).find("signature"), std::string::npos);

  // alg "none" with no signature: never accepted, whatever the claims.
  const std::string none = Base64UrlEncode(R"({"alg":"none","typ":"JWT"})") + "." + token.substr(a + 1, b - a - 1) + ".";
  EXPECT_FALSE(VerifyWriteToken(none, kSecret, kNow).ok());
}

TEST(WriteTokenTest, MalformedTokensSayTheyAreNotAJwt) {
  for (std::string_view bad : {"", "abc", "a.b", "a.b.c.d", "!!.??.**"}) {
    StatusOr<WriteTokenClaims> r = VerifyWriteToken(bad, kSecret, kNow);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(Message(r).find("JWT"), std::string::npos) << bad << ": " << Message(r);
  }
}

}  // namespace
}  // namespace belfry
