#include "loadtest/http_response_parser.h"

#include <algorithm>
#include <charconv>

namespace belfry::loadtest {
namespace {

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

// True iff the comma-separated header value `list` has `token` (case-insensitive).
bool HasToken(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (EqualsIgnoreCase(item, token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

void HttpResponseParser::Reset() {
  state_ = State::kIncomplete;
  phase_ = Phase::kHeaders;
  head_.clear();
  line_.clear();
  line_complete_ = false;
  body_.clear();
  retry_after_.clear();
  error_.clear();
  status_ = 0;
  close_ = false;
  chunked_ = false;
  has_length_ = false;
  remaining_ = 0;
  bytes_ = 0;
}

void HttpResponseParser::Fail(std::string message) {
  state_ = State::kError;
  phase_ = Phase::kDone;
  error_ = std::move(message);
}

size_t HttpResponseParser::Feed(std::string_view data, State* state) {
  size_t used = 0;
  while (used < data.size() && state_ == State::kIncomplete) {
    const std::string_view rest = data.substr(used);
    size_t n = 0;
    switch (phase_) {
      case Phase::kHeaders:
        n = FeedHeaders(rest);
        break;
      case Phase::kBody:
      case Phase::kChunkData: {
        n = static_cast<size_t>(std::min<uint64_t>(remaining_, rest.size()));
        if (body_.size() + n > kMaxBodyBytes) {
          Fail("body over " + std::to_string(kMaxBodyBytes) + " bytes");
          break;
        }
        body_.append(rest.data(), n);
        remaining_ -= n;
        if (remaining_ == 0) {
          if (phase_ == Phase::kBody) {
            phase_ = Phase::kDone;
            state_ = State::kComplete;
          } else {
            phase_ = Phase::kChunkDataEnd;
          }
        }
        break;
      }
      case Phase::kChunkSize: {
        if (!TakeLine(rest, &n)) break;
        const std::string_view hex = Trim(std::string_view(line_).substr(0, line_.find(';')));
        uint64_t size = 0;
        const auto [p, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), size, 16);
        if (hex.empty() || ec != std::errc() || p != hex.data() + hex.size()) {
          Fail("bad chunk size line '" + line_ + "'");
          break;
        }
        if (size > kMaxBodyBytes) {
          Fail("chunk over " + std::to_string(kMaxBodyBytes) + " bytes");
          break;
        }
        remaining_ = size;
        phase_ = size == 0 ? Phase::kTrailers : Phase::kChunkData;
        break;
      }
      case Phase::kChunkDataEnd:
        if (!TakeLine(rest, &n)) break;
        if (!line_.empty())
          Fail("chunk data not followed by CRLF");
        else
          phase_ = Phase::kChunkSize;
        break;
      case Phase::kTrailers:
        if (!TakeLine(rest, &n)) break;
        if (line_.empty()) {
          phase_ = Phase::kDone;
          state_ = State::kComplete;
        }
        break;
      case Phase::kUntilEof:
        n = rest.size();
        if (body_.size() + n > kMaxBodyBytes) {
          Fail("body over " + std::to_string(kMaxBodyBytes) + " bytes");
          break;
        }
        body_.append(rest);
        break;
      case Phase::kDone:
        break;
    }
    used += n;
    bytes_ += n;
  }
  *state = state_;
  return used;
}

HttpResponseParser::State HttpResponseParser::FinishOnEof() {
  if (state_ != State::kIncomplete) return state_;
  if (phase_ == Phase::kUntilEof) {
    phase_ = Phase::kDone;
    state_ = State::kComplete;
  } else {
    Fail(bytes_ == 0 ? "connection closed before the response" : "connection closed inside the response");
  }
  return state_;
}

size_t HttpResponseParser::FeedHeaders(std::string_view data) {
  const size_t old = head_.size();
  // Search only the new bytes (and the three before them) for the blank line.
  const size_t from = old >= 3 ? old - 3 : 0;
  size_t take = data.size();
  if (old == 0) {
    // The usual case, a whole header block in one read: copy no body bytes into head_.
    const size_t end = data.find("\r\n\r\n");
    if (end != std::string_view::npos) take = end + 4;
  }
  head_.append(data.data(), std::min(take, kMaxHeaderBytes + 4 - old));
  const size_t end = head_.find("\r\n\r\n", from);
  if (end == std::string::npos) {
    if (head_.size() > kMaxHeaderBytes)
      Fail("header block over " + std::to_string(kMaxHeaderBytes) + " bytes");
    return head_.size() - old;
  }
  head_.resize(end + 4);
  const size_t used = head_.size() - old;
  if (!ParseHeaderBlock()) return used;
  if (chunked_) {
    phase_ = Phase::kChunkSize;
  } else if ((status_ >= 100 && status_ < 200) || status_ == 204 || status_ == 304) {
    if (status_ < 200) {
      Fail("1xx responses are not supported");
      return used;
    }
    phase_ = Phase::kDone;
    state_ = State::kComplete;
  } else if (has_length_) {
    if (remaining_ > kMaxBodyBytes) {
      Fail("Content-Length over " + std::to_string(kMaxBodyBytes));
      return used;
    }
    body_.reserve(static_cast<size_t>(remaining_));
    if (remaining_ == 0) {
      phase_ = Phase::kDone;
      state_ = State::kComplete;
    } else {
      phase_ = Phase::kBody;
    }
  } else {
    phase_ = Phase::kUntilEof;
    close_ = true;
  }
  return used;
}

bool HttpResponseParser::ParseHeaderBlock() {
  std::string_view block(head_);
  block.remove_suffix(4);
  size_t eol = block.find("\r\n");
  const std::string_view status_line = block.substr(0, eol);
  // "HTTP/1.1 200 OK"
  if (status_line.size() < 12 || !status_line.starts_with("HTTP/1.") || status_line[8] != ' ') {
    Fail("bad status line '" + std::string(status_line.substr(0, 80)) + "'");
    return false;
  }
  const bool http10 = status_line[7] == '0';
  const auto [p, ec] = std::from_chars(status_line.data() + 9, status_line.data() + 12, status_);
  if (ec != std::errc() || p != status_line.data() + 12 || status_ < 100 || status_ > 599 ||
      (status_line.size() > 12 && status_line[12] != ' ')) {
    Fail("bad status code in '" + std::string(status_line.substr(0, 80)) + "'");
    return false;
  }
  bool keep_alive = false;
  has_length_ = false;
  while (eol != std::string_view::npos) {
    block.remove_prefix(eol + 2);
    eol = block.find("\r\n");
    const std::string_view line = block.substr(0, eol);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      Fail("bad header line '" + std::string(line.substr(0, 80)) + "'");
      return false;
    }
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = Trim(line.substr(colon + 1));
    if (EqualsIgnoreCase(name, "content-length")) {
      uint64_t length = 0;
      const auto [q, e] = std::from_chars(value.data(), value.data() + value.size(), length);
      if (value.empty() || e != std::errc() || q != value.data() + value.size() ||
          (has_length_ && length != remaining_)) {
        Fail("bad Content-Length '" + std::string(value) + "'");
        return false;
      }
      has_length_ = true;
      remaining_ = length;
    } else if (EqualsIgnoreCase(name, "transfer-encoding")) {
      if (HasToken(value, "chunked")) {
        chunked_ = true;
      } else if (!HasToken(value, "identity")) {
        Fail("unsupported Transfer-Encoding '" + std::string(value) + "'");
        return false;
      }
    } else if (EqualsIgnoreCase(name, "connection")) {
      if (HasToken(value, "close")) close_ = true;
      if (HasToken(value, "keep-alive")) keep_alive = true;
    } else if (EqualsIgnoreCase(name, "retry-after")) {
      retry_after_ = std::string(value);
    }
  }
  if (http10 && !keep_alive) close_ = true;
  if (chunked_) has_length_ = false;  // RFC 9112 6.3: chunked wins over Content-Length
  return true;
}

bool HttpResponseParser::TakeLine(std::string_view data, size_t* used) {
  if (line_complete_) {
    line_.clear();
    line_complete_ = false;
  }
  const size_t lf = data.find('\n');
  const size_t n = lf == std::string_view::npos ? data.size() : lf + 1;
  *used = n;
  if (line_.size() + n > kMaxHeaderBytes) {
    Fail("line over " + std::to_string(kMaxHeaderBytes) + " bytes");
    return false;
  }
  line_.append(data.data(), n);
  if (lf == std::string_view::npos) return false;
  if (line_.size() < 2 || line_[line_.size() - 2] != '\r') {
    Fail("line not ended by CRLF");
    return false;
  }
  line_.resize(line_.size() - 2);
  line_complete_ = true;
  return true;
}

}  // namespace belfry::loadtest
