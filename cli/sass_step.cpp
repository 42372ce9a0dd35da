// The post-run SASS step of `fprof run --metrics` (see sass_step.h).
#include "sass_step.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <vector>

#include "fprof/core/nvdisasm.h"
#include "fprof/core/sass_half.h"

namespace fprof::cli {
namespace {

namespace fs = std::filesystem;

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Each wanted function's code (its section, with the copies of what it calls), cut from the first
// saved cubin whose symbol table holds it.
std::vector<std::pair<std::string, std::string>> codeOf(const std::string& dir, std::set<std::string> wanted) {
  std::vector<std::pair<std::string, std::string>> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (wanted.empty()) break;
    if (e.path().extension() != ".cubin") continue;
    const std::string bytes = readFile(e.path());
    for (const core::CubinFunction& f : core::cubinFunctions(bytes)) {
      if (f.code_size == 0 || wanted.erase(f.name) == 0) continue;
      out.emplace_back(f.name, bytes.substr(f.code_offset, f.code_size));
    }
  }
  return out;
}

// The functions' half-precision instructions, from one nvdisasm -b run over their code laid end
// to end (nvdisasm's start-up, not the decoding, is its cost per call; a whole PyTorch cubin took
// 18 s where its one kernel took 0.3 s, on the H100 machine). Where that run fails, each function
// alone, so that code nvdisasm cannot read costs only its own FLOPs.
std::map<std::string, core::SassHalfCounts> halfOpsOf(const std::string& nvdisasm, int sm,
                                                      const std::vector<std::pair<std::string, std::string>>& code,
                                                      const std::string& scratch) {
  std::string blob;
  std::vector<core::CodeRange> ranges;
  for (const auto& [name, bytes] : code) {
    ranges.push_back({name, blob.size(), blob.size() + bytes.size()});
    blob += bytes;
  }
  auto decode = [&](const std::string& bytes) {
    std::ofstream(scratch, std::ios::binary | std::ios::trunc) << bytes;
    std::string text = core::disassembleRawCode(nvdisasm, scratch, sm);
    std::error_code ec;
    fs::remove(scratch, ec);
    return text;
  };
  if (const std::string text = decode(blob); !text.empty()) return core::parseNvdisasmHalfOpsByRange(text, ranges);
  std::map<std::string, core::SassHalfCounts> out;
  if (code.size() < 2) return out;
  for (const auto& [name, bytes] : code) {
    const std::string text = decode(bytes);
    if (!text.empty()) out[name] = core::parseNvdisasmHalfOpsByRange(text, {{name, 0, bytes.size()}})[name];
  }
  return out;
}

}  // namespace

std::string applySassStep(const std::string& db_path, const std::string& cubin_dir) {
  auto needed = core::functionsNeedingSass(db_path);
  if (!needed) return "half-precision FLOPs not completed: " + needed.error();
  if (needed->empty()) return {};
  const std::string nvdisasm = core::findNvdisasm();
  std::map<std::string, core::SassHalfCounts> sass;
  std::string why_missing;
  if (nvdisasm.empty()) {
    why_missing = "unknown: nvdisasm (CUDA toolkit) was not found to read the function's SASS; set FPROF_NVDISASM";
  } else {
    why_missing = "unknown: the function's SASS was not found among the modules the program loaded";
    const auto sm = core::deviceSmOf(db_path);
    const auto code = codeOf(cubin_dir, std::set<std::string>(needed->begin(), needed->end()));
    if (sm && !code.empty()) sass = halfOpsOf(nvdisasm, *sm, code, cubin_dir + "/functions.code");
  }
  if (core::Status s = core::applySassHalfFlops(db_path, sass, why_missing); !s) {
    return "half-precision FLOPs not completed: " + s.error();
  }
  return "read the SASS of " + std::to_string(sass.size()) + " of " + std::to_string(needed->size()) +
         " functions with half-precision instructions (fp16/bf16 FLOPs per lane)";
}

}  // namespace fprof::cli
