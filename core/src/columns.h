// The vocabulary tables are declared in (schema_tables.h), and what is generated from a
// declaration: the columns docs/schema.md and CREATE TABLE show (schema.cpp), the writer's INSERT
// and its binds, the reader's SELECT and its decoding, and merge's copy of a row with its ids
// renumbered. A column is declared once, with its SQL name, type and doc, the schema version that
// added it (and what older files read in its place), the ids it holds, and where its value lives
// in the profile model; adding a column is that declaration plus the model's field.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "fprof/core/schema.h"
#include "fprof/core/text.h"
#include "sqlite_util.h"

namespace fprof::core::detail {

// Whose ids a column holds: merge renumbers process, kernel and NVTX range ids per input (a
// string id is re-interned through its text).
enum class Ref { none, process, kernel, nvtx_range, string };

// A column as data, what schema.h's ColumnDef shows.
struct ColumnInfo {
  const char* name = "";
  const char* type = "";  // SQL type and constraints
  const char* doc = "";
  Ref ref = Ref::none;
  int since = 1;             // the schema version that added it
  const char* before = "NULL";  // what a file older than `since` reads in its place, as SQL
};

// Options of a column declaration.
struct Since {
  int version;
  const char* before = "NULL";
};

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

// A model value as SQL: integers (and bool, as 0/1) as INTEGER, floating point as REAL,
// std::string as TEXT, an empty std::optional as NULL.
template <class T>
void bindValue(Statement& st, int i, const T& v) {
  if constexpr (IsOptional<T>::value) {
    if (v) {
      bindValue(st, i, *v);
    } else {
      sqlite3_bind_null(st.get(), i);
    }
  } else if constexpr (std::is_same_v<T, bool>) {
    st.bind(i, int64_t{v ? 1 : 0});
  } else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) {
    st.bind(i, static_cast<uint64_t>(v));
  } else if constexpr (std::is_integral_v<T>) {
    st.bind(i, static_cast<int64_t>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    st.bind(i, static_cast<double>(v));
  } else {
    st.bind(i, std::string_view(v));
  }
}

// The reverse, from a Statement's columns or a ValueRow: every text cleaned (core/text.h).
template <class Row, class T>
void readValue(const Row& row, int i, T& out) {
  if constexpr (IsOptional<T>::value) {
    if (row.isNull(i)) {
      out.reset();
    } else {
      readValue(row, i, out.emplace());
    }
  } else if constexpr (std::is_same_v<T, bool>) {
    out = row.i64(i) != 0;
  } else if constexpr (std::is_integral_v<T>) {
    out = static_cast<T>(row.i64(i));
  } else if constexpr (std::is_floating_point_v<T>) {
    out = static_cast<T>(row.f64(i));
  } else {
    out = cleanText(row.textView(i));
  }
}

// How a column's value gets from the model into SQL and back. Each kind says whether the writer
// binds it and the reader reads it; `bind` and `read` take a context that interns strings (writer)
// or maps the file's string ids (reader); `copy` turns a row the reader returned into the record
// the writer takes (merge), with string ids turned back into text by `str`.

// A member stored as it is: `record` on the record the writer takes, `row` on the row the reader
// returns (the same member where they are one type or share a base).
template <class WM, class RM>
struct Value {
  WM record;
  RM row;
  static constexpr bool kWritten = true, kRead = true;
  template <class W, class Ctx>
  bool bind(Statement& st, int i, const W& w, Ctx&) const {
    bindValue(st, i, w.*record);
    return true;
  }
  template <class Row, class R, class Ctx>
  void read(const Row& r_row, int i, R& r, Ctx&) const {
    readValue(r_row, i, r.*row);
  }
  template <class R, class W, class Str>
  void copy(const R& r, W& w, const Str&) const {
    w.*record = r.*row;
  }
};

// A text where "" is stored as NULL (and NULL read as "").
template <class M>
struct TextOrNull {
  M member;
  static constexpr bool kWritten = true, kRead = true;
  template <class W, class Ctx>
  bool bind(Statement& st, int i, const W& w, Ctx&) const {
    const std::string& text = w.*member;
    bindValue(st, i, text.empty() ? std::optional<std::string_view>() : std::optional<std::string_view>(text));
    return true;
  }
  template <class Row, class R, class Ctx>
  void read(const Row& row, int i, R& r, Ctx&) const {
    r.*member = cleanText(row.textView(i));
  }
  template <class R, class W, class Str>
  void copy(const R& r, W& w, const Str&) const {
    w.*member = r.*member;
  }
};

// A member stored through a mapping, e.g. a bool as the words 'alloc' and 'free'.
template <class M, class Encode, class Decode>
struct Mapped {
  M member;
  Encode encode;  // member value -> SQL value
  Decode decode;  // text read -> member value
  static constexpr bool kWritten = true, kRead = true;
  template <class W, class Ctx>
  bool bind(Statement& st, int i, const W& w, Ctx&) const {
    bindValue(st, i, encode(w.*member));
    return true;
  }
  template <class Row, class R, class Ctx>
  void read(const Row& row, int i, R& r, Ctx&) const {
    r.*member = decode(row.textView(i));
  }
  template <class R, class W, class Str>
  void copy(const R& r, W& w, const Str&) const {
    w.*member = r.*member;
  }
};

// An id into the string table. The writer interns the record's text (`fallback`'s where the text
// is empty, or NULL where `empty_is_null`); the reader returns the string's id in
// Profile::strings (into a std::string member, its text), and a placeholder naming `what`
// where the file lacks the string.
template <class WM, class RM>
struct Interned {
  WM text;
  RM id;
  const char* what;
  WM fallback = nullptr;
  bool empty_is_null = false;
  static constexpr bool kWritten = true, kRead = true;
  template <class W, class Ctx>
  bool bind(Statement& st, int i, const W& w, Ctx& ctx) const {
    std::string_view t = w.*text;
    if (t.empty() && fallback) t = w.*fallback;
    if (t.empty() && empty_is_null) {
      sqlite3_bind_null(st.get(), i);
      return true;
    }
    auto interned = ctx.intern(t);
    if (!interned) return false;
    st.bind(i, *interned);
    return true;
  }
  template <class Row, class R, class Ctx>
  void read(const Row& row, int i, R& r, Ctx& ctx) const {
    using Target = std::remove_cvref_t<decltype(r.*id)>;
    if constexpr (std::is_same_v<Target, std::string>) {
      r.*id = ctx.stringText(row, i, what);
    } else if constexpr (IsOptional<Target>::value) {
      if (row.isNull(i)) {
        (r.*id).reset();
      } else {
        r.*id = ctx.stringId(row.i64(i), what);
      }
    } else {
      r.*id = ctx.stringId(row.i64(i), what);
    }
  }
  template <class R, class W, class Str>
  void copy(const R& r, W& w, const Str& str) const {
    using Target = std::remove_cvref_t<decltype(r.*id)>;
    if constexpr (std::is_same_v<Target, std::string>) {
      w.*text = r.*id;
    } else if constexpr (IsOptional<Target>::value) {
      w.*text = r.*id ? str(*(r.*id)) : std::string();
    } else {
      w.*text = str(r.*id);
    }
  }
};

// A low-cardinality text (launch API, occupancy limiter) that the reader keeps as a string id,
// so a million rows hold no std::string each.
template <class WM, class RM>
struct TextAsId {
  WM text;
  RM id;
  static constexpr bool kWritten = true, kRead = true;
  template <class W, class Ctx>
  bool bind(Statement& st, int i, const W& w, Ctx&) const {
    bindValue(st, i, w.*text);
    return true;
  }
  template <class Row, class R, class Ctx>
  void read(const Row& row, int i, R& r, Ctx& ctx) const {
    r.*id = ctx.textId(row.textView(i));
  }
  template <class R, class W, class Str>
  void copy(const R& r, W& w, const Str& str) const {
    w.*text = str(r.*id);
  }
};

// An id the writer hands out (kernel.id): bound from the context, read into `id`.
template <class RM>
struct WriterAssigned {
  RM id;
  static constexpr bool kWritten = true, kRead = true;
  template <class W, class Ctx>
  bool bind(Statement& st, int i, const W&, Ctx& ctx) const {
    st.bind(i, ctx.assignedId());
    return true;
  }
  template <class Row, class R, class Ctx>
  void read(const Row& row, int i, R& r, Ctx&) const {
    readValue(row, i, r.*id);
  }
  template <class R, class W, class Str>
  void copy(const R&, W&, const Str&) const {}
};

// An id SQLite hands out on insert (process.id), read into `id`.
template <class RM>
struct DatabaseAssigned {
  RM id;
  static constexpr bool kWritten = false, kRead = true;
  template <class Row, class R, class Ctx>
  void read(const Row& row, int i, R& r, Ctx&) const {
    readValue(row, i, r.*id);
  }
  template <class R, class W, class Str>
  void copy(const R&, W&, const Str&) const {}
};

// A rowid neither written nor read: the row's place in its table, which orders equal timestamps.
struct RowNumber {
  static constexpr bool kWritten = false, kRead = false;
  template <class R, class W, class Str>
  void copy(const R&, W&, const Str&) const {}
};

// A value the writer computes from the record (kernel.duration_ns); the reader derives it again.
template <class F>
struct Derived {
  F compute;
  static constexpr bool kWritten = true, kRead = false;
  template <class W, class Ctx>
  bool bind(Statement& st, int i, const W& w, Ctx&) const {
    bindValue(st, i, compute(w));
    return true;
  }
  template <class R, class W, class Str>
  void copy(const R&, W&, const Str&) const {}
};

// A member of a member (graph_launch_counter's counters.dram_read_bytes ...), stored as it is.
template <class Outer, class Inner>
struct Nested {
  Outer outer;
  Inner inner;
  static constexpr bool kWritten = true, kRead = true;
  template <class W, class Ctx>
  bool bind(Statement& st, int i, const W& w, Ctx&) const {
    bindValue(st, i, (w.*outer).*inner);
    return true;
  }
  template <class Row, class R, class Ctx>
  void read(const Row& row, int i, R& r, Ctx&) const {
    readValue(row, i, (r.*outer).*inner);
  }
  template <class R, class W, class Str>
  void copy(const R& r, W& w, const Str&) const {
    (w.*outer).*inner = (r.*outer).*inner;
  }
};

// A table whose rows the writer and reader handle themselves (metadata is a map; string is the
// interning itself): its columns are declared for the schema only.
struct ByHand {
  static constexpr bool kWritten = false, kRead = false;
  template <class R, class W, class Str>
  void copy(const R&, W&, const Str&) const {}
};

template <class WM, class RM>
constexpr auto interned(WM text, RM id, const char* what) {
  return Interned<WM, RM>{text, id, what};
}
// The record's text, or `fallback`'s where it is empty.
template <class WM, class RM>
constexpr auto internedOr(WM text, WM fallback, RM id, const char* what) {
  return Interned<WM, RM>{text, id, what, fallback};
}
// NULL where the record's text is empty.
template <class WM, class RM>
constexpr auto internedOrNull(WM text, RM id, const char* what) {
  return Interned<WM, RM>{text, id, what, nullptr, true};
}
template <class WM, class RM>
constexpr auto textAsId(WM text, RM id) {
  return TextAsId<WM, RM>{text, id};
}
template <class RM>
constexpr auto writerAssigned(RM id) {
  return WriterAssigned<RM>{id};
}
template <class RM>
constexpr auto databaseAssigned(RM id) {
  return DatabaseAssigned<RM>{id};
}
template <class Outer, class Inner>
constexpr auto nested(Outer outer, Inner inner) {
  return Nested<Outer, Inner>{outer, inner};
}
template <class M, class E, class D>
constexpr auto mapped(M member, E encode, D decode) {
  return Mapped<M, E, D>{member, encode, decode};
}
template <class M>
constexpr auto textOrNull(M member) {
  return TextOrNull<M>{member};
}
template <class F>
constexpr auto derived(F compute) {
  return Derived<F>{compute};
}
inline constexpr RowNumber kRowNumber{};
inline constexpr ByHand kByHand{};

template <class A>
struct Column {
  ColumnInfo info;
  A access;
  static constexpr bool kIsValue = requires(A a) {
    a.record;
    a.row;
  };
};

// A member pointer declares a Value of that member on both sides.
template <class A>
constexpr auto toAccess(A a) {
  if constexpr (std::is_member_object_pointer_v<A>) {
    return Value<A, A>{a, a};
  } else {
    return a;
  }
}
// The writer's record and the reader's row are different types with the member of one name.
template <class WM, class RM>
constexpr auto both(WM record, RM row) {
  return Value<WM, RM>{record, row};
}
constexpr void applyOption(ColumnInfo& c, Ref ref) { c.ref = ref; }
constexpr void applyOption(ColumnInfo& c, Since since) {
  c.since = since.version;
  c.before = since.before;
}

// column("bytes", "INTEGER NOT NULL", "Bytes copied.", &MemcpyRecord::bytes [, Ref::..., Since{...}])
template <class A, class... Options>
constexpr auto column(const char* name, const char* type, const char* doc, A access, Options... options) {
  Column<decltype(toAccess(access))> c{{name, type, doc}, toAccess(access)};
  (applyOption(c.info, options), ...);
  return c;
}

struct TableInfo {
  const char* name = "";
  const char* doc = "";
  const char* constraints = "";        // e.g. "PRIMARY KEY (a, b)"
  std::array<const char*, 3> indexes{};  // CREATE INDEX statements, built when the writer closes
  int since = 1;                       // the schema version that added the table
  bool replace = false;                // the writer replaces a row with the same key
};

template <class... C>
struct Table {
  TableInfo info;
  std::tuple<C...> columns;

  template <class F>
  constexpr void forEach(F&& f) const {
    std::apply([&](const auto&... c) { (f(c), ...); }, columns);
  }
  bool existsIn(int schema_version) const { return schema_version >= info.since; }
};

template <class... C>
constexpr Table<C...> table(TableInfo info, C... columns) {
  return {info, {columns...}};
}

// --- What a declaration generates ---

inline const char* refName(Ref ref) {
  switch (ref) {
    case Ref::process: return "process";
    case Ref::kernel: return "kernel";
    case Ref::nvtx_range: return "nvtx_range";
    case Ref::string: return "string";
    case Ref::none: break;
  }
  return "";
}

template <class T>
TableDef tableDef(const T& t) {
  TableDef def{t.info.name, t.info.doc, {}, {}, t.info.constraints, t.info.since};
  t.forEach([&](const auto& c) {
    def.columns.push_back({c.info.name, c.info.type, c.info.doc, c.info.since,
                           c.info.since > 1 ? c.info.before : "", refName(c.info.ref)});
  });
  for (const char* index : t.info.indexes) {
    if (index) def.indexes.emplace_back(index);
  }
  return def;
}

// "INSERT [OR REPLACE] INTO t(a, b) VALUES (?,?)" over the columns the writer binds, in order.
template <class T>
std::string insertSql(const T& t) {
  std::string names, params;
  t.forEach([&](const auto& c) {
    if constexpr (std::decay_t<decltype(c.access)>::kWritten) {
      names += (names.empty() ? "" : ", ") + std::string(c.info.name);
      params += params.empty() ? "?" : ",?";
    }
  });
  return std::string(t.info.replace ? "INSERT OR REPLACE INTO " : "INSERT INTO ") + t.info.name + "(" + names +
         ") VALUES (" + params + ")";
}

// The columns the reader reads, in order, as a file of `schema_version` has them: a column added
// later reads its `before` value. `prefix` qualifies each name (e.g. "m.").
template <class T>
std::string selectList(const T& t, int schema_version, const char* prefix = "") {
  std::string list;
  t.forEach([&](const auto& c) {
    if constexpr (std::decay_t<decltype(c.access)>::kRead) {
      if (!list.empty()) list += ", ";
      list += schema_version >= c.info.since ? prefix + std::string(c.info.name) : std::string(c.info.before);
    }
  });
  return list;
}

// How many columns the reader reads (selectList's length): where a query's extra columns start.
template <class T>
constexpr int readColumnCount(const T& t) {
  int n = 0;
  t.forEach([&](const auto& c) {
    if constexpr (std::decay_t<decltype(c.access)>::kRead) ++n;
  });
  return n;
}

// Binds one record's columns from parameter 1; false where interning a string failed.
template <class T, class W, class Ctx>
bool bindRow(const T& t, Statement& st, const W& w, Ctx& ctx) {
  int i = 1;
  bool ok = true;
  t.forEach([&](const auto& c) {
    if constexpr (std::decay_t<decltype(c.access)>::kWritten) {
      if (ok) ok = c.access.bind(st, i++, w, ctx);
    }
  });
  return ok;
}

// Whether a column's value has the kind its declared SQL type says: an INTEGER column an integer,
// a REAL column a number, either one NULL. SQLite keeps what the column's type cannot take as it
// came (text that is no number, a blob, a fraction in an INTEGER column); reading such a value as
// a number converts it silently. Asked before the value is read, which may convert it.
template <class Row>
bool holdsDeclaredKind(const Row& row, int i, const char* declared_type) {
  const bool integer = declared_type[0] == 'I';
  if (!integer && declared_type[0] != 'R') return true;  // a TEXT column: any value reads as text
  const int type = row.type(i);
  return type == SQLITE_NULL || type == SQLITE_INTEGER || (!integer && type == SQLITE_FLOAT);
}

// A number column of a row whose value is of another kind (holdsDeclaredKind), as readRow found it.
struct WrongKind {
  const char* column = nullptr;  // nullptr: every number column held a number
  int type = 0;                  // what it held: SQLITE_TEXT, SQLITE_BLOB or SQLITE_FLOAT
  explicit operator bool() const { return column != nullptr; }
};

// Reads one row (a Statement's or a ValueRow's columns from `first`) into `r`, in declared order.
// Returns the first number column whose value was of another kind, read as SQLite converts it:
// the caller counts the row as damaged.
template <class T, class Row, class R, class Ctx>
WrongKind readRow(const T& t, const Row& row, R& r, Ctx& ctx, int first = 0) {
  int i = first;
  WrongKind wrong;
  t.forEach([&](const auto& c) {
    if constexpr (std::decay_t<decltype(c.access)>::kRead) {
      if (!wrong && !holdsDeclaredKind(row, i, c.info.type)) wrong = {c.info.name, row.type(i)};
      c.access.read(row, i++, r, ctx);
    }
  });
  return wrong;
}

// The record the writer takes from a row the reader returned; `str(id)` gives a string id's text.
template <class T, class R, class W, class Str>
void copyRow(const T& t, const R& r, W& w, const Str& str) {
  t.forEach([&](const auto& c) { c.access.copy(r, w, str); });
}

template <class T>
struct IsIdValue : std::is_integral<T> {};
template <class T>
struct IsIdValue<std::optional<T>> : std::is_integral<T> {};

// Calls fn(info, value&) for every column holding ids of `ref` (an integer member, optional or not)
// of a writer's record (Side::record) or a reader's row (Side::row), until fn returns an error.
enum class Side { record, row };

template <Side kSide, class T, class Obj, class Fn>
Status forEachRef(const T& t, Ref ref, Obj& obj, Fn&& fn) {
  Status result;
  t.forEach([&](const auto& c) {
    if constexpr (std::decay_t<decltype(c)>::kIsValue) {
      auto& value = [&]() -> auto& {
        if constexpr (kSide == Side::record) {
          return obj.*(c.access.record);
        } else {
          return obj.*(c.access.row);
        }
      }();
      if constexpr (IsIdValue<std::remove_cvref_t<decltype(value)>>::value) {
        if (result && c.info.ref == ref) result = fn(c.info, value);
      }
    }
  });
  return result;
}

}  // namespace fprof::core::detail
