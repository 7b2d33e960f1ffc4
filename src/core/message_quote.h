// MessageQuote: user input echoed safely in rejection messages (which travel in logs, Kafka
// headers and JSON results). Control characters (C0, DEL, C1) and malformed UTF-8 are escaped
// and the echo is cut after a bounded number of input bytes, never inside a UTF-8 sequence.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace belfry {

// Length of the well-formed UTF-8 sequence (RFC 3629) starting at text[i], or 0 if malformed.
size_t Utf8SequenceLength(std::string_view text, size_t i);

// Byte offset of the first malformed UTF-8 sequence, or npos.
size_t FirstInvalidUtf8(std::string_view text);

// Byte offset of the first ASCII control character (< 0x20 or 0x7f), if any.
std::optional<size_t> FirstControlChar(std::string_view text);

// How many bytes of any user-supplied text a message quotes: the one echo limit.
inline constexpr size_t kMaxEchoBytes = 100;

// `text` in double quotes, with '"' and '\' escaped too; at most `max_bytes` of input are shown,
// followed by "... (N bytes)" when cut.
std::string QuoteForMessage(std::string_view text, size_t max_bytes = kMaxEchoBytes);

// `text` without quotes (for JSON values shown as they were written: quotes stay as they are);
// at most `max_bytes` of input are shown, followed by "..." when cut.
std::string ExcerptForMessage(std::string_view text, size_t max_bytes);

}  // namespace belfry
