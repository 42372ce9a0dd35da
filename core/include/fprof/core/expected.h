// Expected<T>: a value or an error message a user can act on. Offline code returns these instead
// of throwing (exceptions are for main() only; see STYLE.md rule 5).
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace fprof::core {

struct Error {
  std::string message;
};

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT: implicit on purpose, like std::expected
  Expected(Error error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const std::string& error() const { return std::get<1>(v_).message; }

 private:
  std::variant<T, Error> v_;
};

// Expected<void> equivalent: empty message means success.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : message_(std::move(error.message)) {}  // NOLINT
  static Status okStatus() { return {}; }
  bool ok() const { return message_.empty(); }
  explicit operator bool() const { return ok(); }
  const std::string& error() const { return message_; }

 private:
  std::string message_;
};

inline Error makeError(std::string message) { return Error{std::move(message)}; }

}  // namespace fprof::core
