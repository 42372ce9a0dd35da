// Writing an export piece by piece: rows formatted into a buffer that goes to the output every
// megabyte, and JSON written value by value in the layout nlohmann's dump(2) gives a whole
// document, so that an export's memory does not grow with the number of rows it holds.
#pragma once

#include <fmt/format.h>

#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fprof/core/output.h"

namespace fprof::cli {

// Text to an output in pieces. The first failed write is kept; later writes are dropped, and
// ok() lets a long loop stop early.
class RowWriter {
 public:
  explicit RowWriter(core::TextOutput& out) : out_(out) {}
  RowWriter(const RowWriter&) = delete;
  RowWriter& operator=(const RowWriter&) = delete;

  template <class... Args>
  void format(fmt::format_string<Args...> f, Args&&... args) {
    fmt::format_to(std::back_inserter(buffer_), f, std::forward<Args>(args)...);
    if (buffer_.size() >= kFlushBytes) (void)flush();
  }
  void write(std::string_view text) {
    buffer_.append(text);
    if (buffer_.size() >= kFlushBytes) (void)flush();
  }
  bool ok() const { return status_.ok(); }
  // Hands what is buffered to the output; the status of every write so far.
  core::Status flush();

 private:
  static constexpr size_t kFlushBytes = size_t{1} << 20;
  core::TextOutput& out_;
  std::string buffer_;
  core::Status status_;
};

// A JSON document written value by value: objects and arrays opened and closed, members and
// elements given whole (as nlohmann::json) or opened in turn. The text is byte for byte what
// nlohmann's dump(2, ' ', false, replace) writes for the same document; an object's members must
// come in the order nlohmann keeps them (by key).
class JsonStream {
 public:
  explicit JsonStream(RowWriter& w) : w_(w) {}

  void beginObject(std::string_view key = {}) { begin('{', key); }
  void beginArray(std::string_view key = {}) { begin('[', key); }
  void value(const nlohmann::json& v, std::string_view key = {});
  void end();  // the innermost open object or array; the document ends with a line feed
  // A value in two steps, for values made on several threads: its text at a depth (the depth of a
  // value in the innermost open object or array is depth()), then that text written in its place.
  size_t depth() const { return open_.size(); }
  static std::string valueText(const nlohmann::json& v, size_t depth);
  void writeValueText(std::string_view text, std::string_view key = {});

 private:
  void begin(char bracket, std::string_view key);
  void child(std::string_view key);

  struct Open {
    char bracket;
    bool empty = true;
  };
  RowWriter& w_;
  std::vector<Open> open_;
};

// nlohmann's text of a value: replacement characters for invalid UTF-8, never an exception.
std::string jsonText(const nlohmann::json& j, int indent);

}  // namespace fprof::cli
