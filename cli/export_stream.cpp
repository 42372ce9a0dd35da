// Exports written piece by piece (see export_stream.h).
#include "export_stream.h"

namespace fprof::cli {

std::string jsonText(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

core::Status RowWriter::flush() {
  if (status_ && !buffer_.empty()) status_ = out_.write(buffer_);
  buffer_.clear();
  return status_;
}

void JsonStream::child(std::string_view key) {
  if (open_.empty()) return;
  Open& parent = open_.back();
  w_.write(parent.empty ? "\n" : ",\n");
  parent.empty = false;
  w_.write(std::string(open_.size() * 2, ' '));
  if (parent.bracket == '{') {
    w_.write(jsonText(nlohmann::json(std::string(key)), -1));
    w_.write(": ");
  }
}

void JsonStream::begin(char bracket, std::string_view key) {
  child(key);
  w_.write(std::string_view(&bracket, 1));
  open_.push_back({bracket});
}

void JsonStream::value(const nlohmann::json& v, std::string_view key) {
  writeValueText(valueText(v, depth()), key);
}

// A value dumped on its own starts at column 0: every line after its first moves in to the depth
// it sits at (JSON strings hold no raw line feed, so only the layout's are met).
std::string JsonStream::valueText(const nlohmann::json& v, size_t depth) {
  const std::string text = jsonText(v, 2);
  const std::string indent = "\n" + std::string(depth * 2, ' ');
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  size_t from = 0;
  for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', from)) {
    out.append(text, from, at - from);
    out += indent;
    from = at + 1;
  }
  out.append(text, from);
  return out;
}

void JsonStream::writeValueText(std::string_view text, std::string_view key) {
  child(key);
  w_.write(text);
}

void JsonStream::end() {
  const Open closing = open_.back();
  open_.pop_back();
  if (!closing.empty) {
    w_.write("\n");
    w_.write(std::string(open_.size() * 2, ' '));
  }
  w_.write(closing.bracket == '{' ? "}" : "]");
  if (open_.empty()) w_.write("\n");
}

}  // namespace fprof::cli
