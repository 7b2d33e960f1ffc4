// Status: the error value used inside belfry's core. Adapters (src/pg, src/kafka) translate
// library exceptions and error codes into a Status at the boundary.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace belfry {

// [[nodiscard]]: every Status and StatusOr result must be looked at; the build treats a dropped
// one as an error (-Werror=unused-result). Where dropping is right, say why and cast to void.
class [[nodiscard]] Status final {
 public:
  enum class Code {
    kOk,
    kInvalid,      // bad input; retrying the same input gives the same answer
    kRetryable,    // transient infrastructure fault (broker down, connection lost)
    kNotFound,
    kFailedPrecondition,  // e.g. config disagrees with the database
  };

  Status() = default;
  static Status Ok() { return Status(); }
  // `reason` is a short machine-readable code (metric label, DLQ header prefix);
  // `message` is the human-readable explanation.
  static Status Invalid(std::string reason, std::string message) {
    return Status(Code::kInvalid, std::move(reason), std::move(message));
  }
  static Status Retryable(std::string message) { return Status(Code::kRetryable, "retryable", std::move(message)); }
  static Status NotFound(std::string message) { return Status(Code::kNotFound, "not_found", std::move(message)); }
  static Status FailedPrecondition(std::string message) {
    return Status(Code::kFailedPrecondition, "failed_precondition", std::move(message));
  }

  bool ok() const { return code_ == Code::kOk; }
  bool retryable() const { return code_ == Code::kRetryable; }
  Code code() const { return code_; }
  const std::string& reason() const { return reason_; }
  const std::string& message() const { return message_; }
  // "reason: message", or "ok".
  std::string ToString() const { return ok() ? "ok" : reason_ + ": " + message_; }

 private:
  Status(Code code, std::string reason, std::string message)
      : code_(code), reason_(std::move(reason)), message_(std::move(message)) {}

  Code code_ = Code::kOk;
  std::string reason_;
  std::string message_;
};

// StatusOr<T> holds either a value or a non-ok Status.
template <typename T>
class [[nodiscard]] StatusOr final {
 public:
  StatusOr(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  StatusOr(Status status) : v_(std::move(status)) {}   // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  // REQUIRES: !ok()
  const Status& status() const { return std::get<Status>(v_); }
  // REQUIRES: ok()
  T& value() { return std::get<T>(v_); }
  const T& value() const { return std::get<T>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace belfry
