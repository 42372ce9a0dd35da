// Tables handed from the C++ analysis to Python: named, documented columns of one type each, with
// a validity mask where a value can be absent (std::optional in the model: "n/a", never 0). Python
// turns them into Arrow arrays (fprof/_tables.py) without touching the values.
#pragma once

#include <cstdint>
#include <deque>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fprof::python {

enum class ColumnKind { kInt64, kFloat64, kBool, kString };

struct Column {
  std::string name;
  std::string doc;
  ColumnKind kind = ColumnKind::kInt64;
  std::vector<int64_t> ints;     // kInt64, kBool (0/1)
  std::vector<double> floats;    // kFloat64
  std::vector<int32_t> codes;    // kString: index into dictionary, -1 = absent
  std::vector<std::string> dictionary;
  std::vector<uint8_t> valid;    // 1 = present; empty = every value present

  size_t size() const;
};

struct Table {
  std::string name;
  std::string doc;
  std::vector<Column> columns;
  size_t rows = 0;
};

// The doc string of a column of the .fprof schema (core/schema.h); throws std::logic_error
// naming the column when there is none, so a renamed schema column fails the tests, not a user.
std::string schemaDoc(std::string_view table, std::string_view column);
// The doc string of a schema table.
std::string schemaTableDoc(std::string_view table);

// Builds a table column by column from rows of type Row: each column is declared with its name,
// doc string and a getter, so a table's contents and its documentation are written in one place.
template <class Row>
class TableBuilder {
 public:
  TableBuilder(std::string name, std::string doc, const std::vector<Row>& rows) : rows_(rows) {
    table_.name = std::move(name);
    table_.doc = std::move(doc);
    table_.rows = rows.size();
  }

  template <class F>
  TableBuilder& integer(std::string name, std::string doc, F&& get) {
    Column& c = add(std::move(name), std::move(doc), ColumnKind::kInt64);
    c.ints.reserve(rows_.size());
    for (const Row& r : rows_) c.ints.push_back(static_cast<int64_t>(get(r)));
    return *this;
  }
  template <class F>
  TableBuilder& optionalInteger(std::string name, std::string doc, F&& get) {
    Column& c = add(std::move(name), std::move(doc), ColumnKind::kInt64);
    c.ints.reserve(rows_.size());
    c.valid.reserve(rows_.size());
    for (const Row& r : rows_) {
      const auto v = get(r);
      c.ints.push_back(v ? static_cast<int64_t>(*v) : 0);
      c.valid.push_back(v ? 1 : 0);
    }
    return *this;
  }
  template <class F>
  TableBuilder& real(std::string name, std::string doc, F&& get) {
    Column& c = add(std::move(name), std::move(doc), ColumnKind::kFloat64);
    c.floats.reserve(rows_.size());
    for (const Row& r : rows_) c.floats.push_back(static_cast<double>(get(r)));
    return *this;
  }
  template <class F>
  TableBuilder& optionalReal(std::string name, std::string doc, F&& get) {
    Column& c = add(std::move(name), std::move(doc), ColumnKind::kFloat64);
    c.floats.reserve(rows_.size());
    c.valid.reserve(rows_.size());
    for (const Row& r : rows_) {
      const auto v = get(r);
      c.floats.push_back(v ? static_cast<double>(*v) : 0.0);
      c.valid.push_back(v ? 1 : 0);
    }
    return *this;
  }
  template <class F>
  TableBuilder& boolean(std::string name, std::string doc, F&& get) {
    Column& c = add(std::move(name), std::move(doc), ColumnKind::kBool);
    c.ints.reserve(rows_.size());
    for (const Row& r : rows_) c.ints.push_back(get(r) ? 1 : 0);
    return *this;
  }
  template <class F>
  TableBuilder& optionalBoolean(std::string name, std::string doc, F&& get) {
    Column& c = add(std::move(name), std::move(doc), ColumnKind::kBool);
    for (const Row& r : rows_) {
      const auto v = get(r);
      c.ints.push_back(v && *v ? 1 : 0);
      c.valid.push_back(v ? 1 : 0);
    }
    return *this;
  }
  // Strings are dictionary-encoded: a million kernels share a few hundred names.
  template <class F>
  TableBuilder& text(std::string name, std::string doc, F&& get) {
    Column& c = add(std::move(name), std::move(doc), ColumnKind::kString);
    std::deque<std::string> values;  // a deque never moves its strings, so the keys stay valid
    std::unordered_map<std::string_view, int32_t> ids;
    c.codes.reserve(rows_.size());
    for (const Row& r : rows_) {
      // The getter may return a string or a view; either is kept alive until copied.
      const auto& value = get(r);
      const std::string_view s(value);
      auto it = ids.find(s);
      if (it == ids.end()) {
        values.emplace_back(s);
        it = ids.emplace(std::string_view(values.back()), static_cast<int32_t>(values.size() - 1)).first;
      }
      c.codes.push_back(it->second);
    }
    c.dictionary.assign(std::make_move_iterator(values.begin()), std::make_move_iterator(values.end()));
    return *this;
  }
  template <class F>
  TableBuilder& optionalText(std::string name, std::string doc, F&& get) {
    text(std::move(name), std::move(doc), [&](const Row& r) {
      const auto v = get(r);
      return v ? std::string(*v) : std::string();
    });
    Column& c = table_.columns.back();
    c.valid.reserve(rows_.size());
    for (const Row& r : rows_) c.valid.push_back(static_cast<bool>(get(r)) ? 1 : 0);
    for (size_t i = 0; i < c.codes.size(); ++i) {
      if (!c.valid[i]) c.codes[i] = -1;
    }
    return *this;
  }

  Table build() { return std::move(table_); }

 private:
  Column& add(std::string name, std::string doc, ColumnKind kind) {
    Column& c = table_.columns.emplace_back();
    c.name = std::move(name);
    c.doc = std::move(doc);
    c.kind = kind;
    return c;
  }
  const std::vector<Row>& rows_;
  Table table_;
};

}  // namespace fprof::python
