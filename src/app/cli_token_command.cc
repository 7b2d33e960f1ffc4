// belfry token: mints a write token for POST /v1/commands and the console (docs/console.md).
#include <cstdio>

#include "app/cli_commands.h"
#include "app/system_clock.h"
#include "core/iso_time.h"
#include "http/write_token.h"

namespace belfry {

int RunToken(const Config& cfg, const std::string& actor, int64_t ttl_ms) {
  if (cfg.admin.write_token_secret.empty()) {
    std::fprintf(stderr,
                 "belfry token: admin.write_token_secret is not set (BELFRY_ADMIN_WRITE_TOKEN_SECRET): set the "
                 "same secret as the nodes'\n");
    return 78;  // EX_CONFIG
  }
  if (actor.empty() || actor.size() > 255) {
    std::fprintf(stderr, "belfry token: --actor must be 1 to 255 bytes\n");
    return 64;
  }
  SystemClock clock;
  const EpochMs now = clock.NowMs();
  std::printf("%s\n", MintWriteToken(cfg.admin.write_token_secret, actor, now, ttl_ms).c_str());
  std::fprintf(stderr, "a write token for %s, valid until %s\n", actor.c_str(), FormatIsoTime(now + ttl_ms).c_str());
  return 0;
}

}  // namespace belfry
