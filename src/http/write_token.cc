#include "http/write_token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "core/base64url.h"
#include "core/iso_time.h"

namespace belfry {
namespace {

constexpr std::string_view kHeader = R"({"alg":"HS256","typ":"JWT"})";
constexpr size_t kMaxActorBytes = 255;

std::string HmacSha256(std::string_view secret, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

Status Refused(std::string message) { return Status::Invalid("write_token", std::move(message)); }

// The JSON object a base64url segment decodes to, or nullopt.
std::optional<nlohmann::json> DecodeObject(std::string_view segment) {
  std::optional<std::string> text = Base64UrlDecode(segment);
  if (!text) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  return j;
}

}  // namespace

std::string MintWriteToken(std::string_view secret, std::string_view actor, EpochMs now_ms, int64_t ttl_ms) {
  const nlohmann::json claims = {
      {"sub", std::string(actor)},
      {"iat", now_ms / 1000},
      {"exp", (now_ms + ttl_ms) / 1000},
      {"scope", std::string(kWriteTokenScope)},
  };
  std::string signing_input = Base64UrlEncode(kHeader) + "." + Base64UrlEncode(claims.dump());
  const std::string signature = Base64UrlEncode(HmacSha256(secret, signing_input));
  return signing_input + "." + signature;
}

StatusOr<WriteTokenClaims> VerifyWriteToken(std::string_view token, std::string_view secret, EpochMs now_ms) {
  const size_t first = token.find('.');
  const size_t second = first == std::string_view::npos ? first : token.find('.', first + 1);
  if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos) {
    return Refused("the write token is not a JWT (three base64url parts separated by '.')");
  }
  const std::string_view signing_input = token.substr(0, second);
  std::optional<std::string> signature = Base64UrlDecode(token.substr(second + 1));
  std::optional<nlohmann::json> header = DecodeObject(token.substr(0, first));
  if (!signature || !header) return Refused("the write token is not a JWT (its header or signature does not decode)");
  // Only HS256: a token cannot choose "none" or another algorithm for itself.
  if (!header->contains("alg") || (*header)["alg"] != "HS256") {
    return Refused("the write token is not signed with HS256");
  }
  const std::string expected = HmacSha256(secret, signing_input);
  if (signature->size() != expected.size() ||
      CRYPTO_memcmp(signature->data(), expected.data(), expected.size()) != 0) {
    return Refused("the write token's signature does not match this node's admin.write_token_secret");
  }
  std::optional<nlohmann::json> claims = DecodeObject(token.substr(first + 1, second - first - 1));
  if (!claims) return Refused("the write token's claims are not a JSON object");
  const nlohmann::json& c = *claims;
  if (!c.contains("scope") || c["scope"] != kWriteTokenScope) {
    return Refused("the write token's scope is not \"" + std::string(kWriteTokenScope) + "\"");
  }
  if (!c.contains("sub") || !c["sub"].is_string() || c["sub"].get<std::string>().empty() ||
      c["sub"].get<std::string>().size() > kMaxActorBytes) {
    return Refused("the write token names no actor (\"sub\": 1 to 255 bytes)");
  }
  // Seconds since the epoch, up to the year 9999 (so that the milliseconds cannot overflow).
  constexpr int64_t kMaxEpochS = 253'402'300'799;
  if (!c.contains("exp") || !c["exp"].is_number_integer() || c["exp"].get<int64_t>() < 0 ||
      c["exp"].get<int64_t>() > kMaxEpochS) {
    return Refused("the write token has no valid expiry (\"exp\", seconds since the epoch)");
  }
  WriteTokenClaims out;
  out.actor = c["sub"].get<std::string>();
  out.expires_ms = c["exp"].get<int64_t>() * 1000;
  if (c.contains("iat") && c["iat"].is_number_integer() && c["iat"].get<int64_t>() >= 0 &&
      c["iat"].get<int64_t>() <= kMaxEpochS) {
    out.issued_ms = c["iat"].get<int64_t>() * 1000;
  }
  if (now_ms >= out.expires_ms) {
    return Refused("the write token expired at " + FormatIsoTime(out.expires_ms) + ": mint a new one");
  }
  return out;
}

}  // namespace belfry
