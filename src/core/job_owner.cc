#include "core/job_owner.h"

#include <fmt/format.h>

#include <string>

#include "core/message_quote.h"

namespace belfry {

Status CheckOwner(std::string_view owner) {
  if (owner.size() > kMaxOwnerBytes) {
    return Status::Invalid("invalid_owner", fmt::format("owner is {} bytes; the limit is {}", owner.size(), kMaxOwnerBytes));
  }
  if (const auto at = FirstControlChar(owner)) {
    return Status::Invalid("invalid_owner",
                           fmt::format("owner {} contains control character 0x{:02x} at byte {}", QuoteForMessage(owner),
                                       static_cast<unsigned char>(owner[*at]), *at));
  }
  return Status::Ok();
}

}  // namespace belfry
