// Shared database steps of the SASS FLOP counts (see sass_db.h).
#include "sass_db.h"

#include <cstdio>

#include "fprof/core/store.h"

namespace fprof::core::detail {

Expected<std::vector<std::string>> functionsPending(const std::string& db_path, const char* method_column,
                                                    std::string_view pending) {
  std::vector<std::string> names;
  Status s = updateDatabase(db_path, [&](sqlite3* db) -> Status {
    const std::string sql = std::string("SELECT DISTINCT n.value FROM kernel_counter c JOIN kernel k ON k.id = "
                                        "c.kernel_id JOIN string n ON n.id = k.name_id WHERE c.") +
                            method_column + " = ?";
    Statement st(db, sql.c_str());
    if (!st.ok()) return makeError(db_path + ": " + sqliteMessage(db));
    st.bind(1, pending);
    while (st.step() == SQLITE_ROW) names.push_back(st.text(0));
    return {};
  });
  if (!s) return Error{s.error()};
  return names;
}

SassOpWriter::SassOpWriter(sqlite3* db)
    : op_(db, "INSERT OR REPLACE INTO function_sass_op(process_id, name_id, opcode, static_count) "
              "VALUES (?, (SELECT id FROM string WHERE value = ?), ?, ?)") {}

bool SassOpWriter::write(uint32_t process_id, const std::string& name, const SassHalfCounts& classes,
                         bool (*keep)(const std::string& cls)) {
  if (!written_.emplace(process_id, name).second) return true;
  for (const auto& [cls, count] : classes) {
    if (keep != nullptr && !keep(cls)) continue;
    op_.bindAll(process_id, std::string_view(name), std::string_view(cls), count);
    if (op_.run() != SQLITE_DONE) return false;
  }
  return true;
}

std::string wholeNumber(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", v);
  return text;
}

}  // namespace fprof::core::detail
