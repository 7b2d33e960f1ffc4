// HttpResponseParser: an incremental parser of one HTTP/1.1 response at a time, as a keep-alive
// client reads it off a socket in arbitrary pieces. It understands what a client of belfry's
// admin API needs and no more: the status line, Content-Length, Transfer-Encoding: chunked
// (trailers skipped), a body delimited by the end of the connection, "Connection: close" and
// Retry-After. 1xx responses and responses to HEAD are not supported (the harness sends
// neither). Not thread-safe; one parser per connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace belfry::loadtest {

class HttpResponseParser final {
 public:
  enum class State {
    kIncomplete,  // more bytes are needed
    kComplete,    // one whole response was read; see status(), body(), ...
    kError,       // malformed or over a limit; see error(). The connection must be dropped.
  };

  // Bodies (and header blocks) longer than these are errors.
  static constexpr size_t kMaxHeaderBytes = 64 * 1024;
  static constexpr size_t kMaxBodyBytes = 16 * 1024 * 1024;

  // Forgets the previous response. REQUIRES: before the first byte of every response.
  void Reset();

  // Consumes bytes from `data` and returns how many were used; *state says where the response
  // stands. After kComplete, the bytes not used belong to the next response (with one request
  // in flight at a time there should be none). After kError nothing more may be fed.
  size_t Feed(std::string_view data, State* state);

  // The connection ended. Completes a body that runs to the end of the connection; any other
  // unfinished response becomes kError. Returns the state.
  State FinishOnEof();

  // True iff no byte of the current response has been fed since Reset().
  bool empty() const { return bytes_ == 0; }
  State state() const { return state_; }
  int status() const { return status_; }
  // The server will close the connection after this response ("Connection: close", or an
  // HTTP/1.0 response without keep-alive, or a body delimited by the end of the connection).
  bool connection_close() const { return close_; }
  // The Retry-After header's value, "" if absent.
  const std::string& retry_after() const { return retry_after_; }
  bool chunked() const { return chunked_; }
  const std::string& body() const { return body_; }
  // Bytes of this response fed so far, headers included.
  size_t bytes() const { return bytes_; }
  const std::string& error() const { return error_; }

 private:
  enum class Phase { kHeaders, kBody, kChunkSize, kChunkData, kChunkDataEnd, kTrailers, kUntilEof, kDone };

  size_t FeedHeaders(std::string_view data);
  bool ParseHeaderBlock();
  // Consumes one CRLF-terminated line into line_ (without the CRLF). False: incomplete.
  bool TakeLine(std::string_view data, size_t* used);
  void Fail(std::string message);

  State state_ = State::kIncomplete;
  Phase phase_ = Phase::kHeaders;
  std::string head_;            // the header block as it arrives, until its blank line
  std::string line_;            // a chunk-size or trailer line as it arrives
  bool line_complete_ = false;  // line_ holds a whole line (without CRLF) that was handed out
  std::string body_;
  std::string retry_after_;
  std::string error_;
  int status_ = 0;
  bool close_ = false;
  bool chunked_ = false;
  bool has_length_ = false;
  uint64_t remaining_ = 0;  // of the Content-Length body or of the current chunk
  size_t bytes_ = 0;
};

}  // namespace belfry::loadtest
