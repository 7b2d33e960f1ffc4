// Write tokens: who may publish commands through the admin API (POST /v1/commands, the console),
// and as whom (docs/console.md, "Writes and their threat model").
//
// A write token is a JSON Web Token (RFC 7519) signed with HMAC-SHA256 under the node's
// `admin.write_token_secret`: {"alg":"HS256","typ":"JWT"} and the claims
//   sub    the actor, recorded in the audit trail as the command's `belfry-actor`;
//   iat    when it was issued, exp when it expires (seconds since the epoch);
//   scope  "belfry:write".
// `belfry token --actor NAME --ttl 8h` mints one; any JWT library can too. A token carries its
// actor, so a write is attributed to whoever the token was minted for, never to what the request
// says. Expiry is checked against the node's injected clock.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "belfry/clock.h"
#include "belfry/status.h"

namespace belfry {

inline constexpr std::string_view kWriteTokenScope = "belfry:write";
// The shortest secret a node accepts: 32 bytes, the output size of SHA-256 (RFC 7518 §3.2).
inline constexpr size_t kMinWriteTokenSecretBytes = 32;

struct WriteTokenClaims {
  std::string actor;
  EpochMs issued_ms = 0;
  EpochMs expires_ms = 0;
};

// REQUIRES: secret.size() >= kMinWriteTokenSecretBytes, !actor.empty(), ttl_ms > 0.
std::string MintWriteToken(std::string_view secret, std::string_view actor, EpochMs now_ms, int64_t ttl_ms);

// The token's claims when its signature matches `secret`, its scope is belfry:write, its actor is
// a non-empty string of at most 255 bytes, and `now_ms` is before its expiry. Otherwise Invalid
// with reason "write_token" and a message that says which check failed (and when it expired),
// never echoing the token.
StatusOr<WriteTokenClaims> VerifyWriteToken(std::string_view token, std::string_view secret, EpochMs now_ms);

}  // namespace belfry
