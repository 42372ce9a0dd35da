// The post-run SASS step of `fprof run --metrics` (see sass_step.h).
#include "fprof/runner/sass_step.h"
#include "fprof/runner/step_timer.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "fprof/core/environment.h"
#include "fprof/core/nvdisasm.h"
#include "fprof/core/sass_half.h"
#include "fprof/core/sass_pc.h"
#include "fprof/core/sass_tensor.h"

namespace fprof::runner {
namespace {

namespace fs = std::filesystem;

using FunctionCode = std::vector<std::pair<std::string, std::string>>;  // (name, code) pairs

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A saved cubin read and its functions listed, once a process: the steps after a run (the
// duplicates' counts, then the half-precision and tensor FLOPs) cut functions from the same files
// (0.2 s each time for the PyTorch step's cubins on an H100), and so does the
// decoding while the program runs (SassPrefetch). A file is known by its inode, size and
// modification time: the collector renames cubins at the end of the run (their CRC into the name),
// and one read while the collector was still writing it is read again once complete. Kept up to
// 1 GiB of cubins; past that a file is read each time (or, for the prefetch, left to the steps after).
struct SavedCubin {
  std::string bytes;
  std::vector<core::CubinFunction> functions;
};

struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  int64_t modified_ns = 0;
  auto tie() const { return std::tie(device, inode, size, modified_ns); }
  bool operator<(const FileIdentity& o) const { return tie() < o.tie(); }
};

std::optional<FileIdentity> identityOf(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{st.st_dev, st.st_ino, st.st_size, int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec};
}

// `only_kept`: nullptr rather than a read that the cache cannot keep.
std::shared_ptr<const SavedCubin> savedCubin(const fs::path& file, bool only_kept = false) {
  constexpr size_t kKeptBytes = size_t{1} << 30;
  static std::mutex mu;
  static std::map<FileIdentity, std::shared_ptr<const SavedCubin>> kept;
  static size_t kept_bytes = 0;
  const std::optional<FileIdentity> id = identityOf(file);
  std::lock_guard lock(mu);
  if (id) {
    if (auto it = kept.find(*id); it != kept.end()) return it->second;
  }
  if (only_kept && (!id || kept_bytes + static_cast<size_t>(id->size) > kKeptBytes)) return nullptr;
  auto cubin = std::make_shared<SavedCubin>();
  cubin->bytes = readFile(file);
  cubin->functions = core::cubinFunctions(cubin->bytes);
  if (id && static_cast<off_t>(cubin->bytes.size()) == id->size && kept_bytes + cubin->bytes.size() <= kKeptBytes) {
    kept_bytes += cubin->bytes.size();
    kept.emplace(*id, cubin);
  }
  return cubin;
}

// Each function with code in each saved cubin whose file keep_file accepts: visit(file, function,
// the cubin's bytes). `only_kept`: the cubins the cache cannot keep are passed over (savedCubin).
template <typename Keep, typename Visit>
void forEachSavedFunction(const std::string& dir, Keep&& keep_file, Visit&& visit, bool only_kept = false) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".cubin" || !keep_file(e.path())) continue;
    const std::shared_ptr<const SavedCubin> cubin = savedCubin(e.path(), only_kept);
    if (cubin == nullptr) continue;
    for (const core::CubinFunction& f : cubin->functions) {
      if (f.code_size != 0) visit(e.path(), f, cubin->bytes);
    }
  }
}

// Each wanted function's code (its section, with the copies of what it calls), cut from every
// saved cubin whose symbol table holds it: one entry per distinct code. Libraries that compile
// kernels at run time (cuDNN's generated attention) give one name to different code in several
// modules (an fp16 and a bf16 build); a kernel record does not say which module it ran from, so the
// SASS step reads all of them together and counts only what holds for each (sass_half.h bounds,
// sass_tensor.h precisions).
FunctionCode codeOf(const std::string& dir, const std::set<std::string>& wanted, bool only_kept = false) {
  FunctionCode out;
  std::set<std::pair<std::string, std::string>> seen;
  forEachSavedFunction(
      dir, [](const fs::path&) { return true; },
      [&](const fs::path&, const core::CubinFunction& f, const std::string& bytes) {
        if (wanted.count(f.name) == 0) return;
        std::string code = bytes.substr(f.code_offset, f.code_size);
        if (seen.emplace(f.name, code).second) out.emplace_back(f.name, std::move(code));
      },
      only_kept);
  return out;
}

// The half-precision and tensor instructions of some functions, from one nvdisasm -b run over their
// code laid end to end (a name with several codes gets the classes of all). On the H100 machine
// one instruction took nvdisasm -b SM90 0.41-0.58 s (its start-up) and 65,536 took 2.1-2.5 s, so
// one run per part beats one per function; a whole PyTorch cubin took 18 s where its one kernel
// took 0.3 s. Where that run fails, each function alone, so that code nvdisasm cannot read costs
// only its own FLOPs.
struct Decoded {
  std::shared_ptr<const std::string> text;  // nvdisasm's
  std::vector<core::CodeRange> ranges;      // where each function's code is in what it read
  std::vector<std::string> codes;           // each range's code
};

std::vector<Decoded> decodeFunctions(const std::string& nvdisasm, int sm, const FunctionCode& code,
                                     const std::string& scratch) {
  std::string blob;
  std::vector<core::CodeRange> ranges;
  std::vector<std::string> codes;
  for (const auto& [name, bytes] : code) {
    ranges.push_back({name, blob.size(), blob.size() + bytes.size()});
    codes.push_back(bytes);
    blob += bytes;
  }
  auto decode = [&](const std::string& bytes) {
    std::ofstream(scratch, std::ios::binary | std::ios::trunc) << bytes;
    std::string text = core::disassembleRawCode(nvdisasm, scratch, sm);
    std::error_code ec;
    fs::remove(scratch, ec);
    return text;
  };
  std::vector<Decoded> out;
  if (std::string text = decode(blob); !text.empty()) {
    out.push_back({std::make_shared<const std::string>(std::move(text)), std::move(ranges), std::move(codes)});
    return out;
  }
  if (code.size() < 2) return out;
  for (const auto& [name, bytes] : code) {
    if (std::string text = decode(bytes); !text.empty()) {
      out.push_back({std::make_shared<const std::string>(std::move(text)), {{name, 0, bytes.size()}}, {bytes}});
    }
  }
  return out;
}

// How many nvdisasm processes decode at once: FPROF_NVDISASM_JOBS, else one per core up to 8.
size_t decodeJobs() {
  const std::optional<int64_t> asked =
      core::env::Parser(core::env::processEnvironment()).integer(core::env::Var::kNvdisasmJobs);
  return asked ? static_cast<size_t>(*asked) : std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
}

// The functions split into `groups` parts of about equal code size (largest first, each to the
// lightest part), so that the nvdisasm runs end together.
std::vector<FunctionCode> balancedParts(const FunctionCode& code, size_t groups) {
  std::vector<size_t> order(code.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return code[a].second.size() > code[b].second.size(); });
  std::vector<FunctionCode> parts(std::max<size_t>(1, std::min(groups, code.size())));
  std::vector<size_t> bytes(parts.size(), 0);
  for (size_t i : order) {
    const size_t lightest = std::min_element(bytes.begin(), bytes.end()) - bytes.begin();
    parts[lightest].push_back(code[i]);
    bytes[lightest] += code[i].second.size();
  }
  return parts;
}

// The functions decoded by several nvdisasm runs at once (the step's cost on a metrics run: about
// 0.8-0.9 s for 29 functions in one run on an H200 machine).
std::vector<Decoded> decodeInParallel(const std::string& nvdisasm, int sm, const FunctionCode& code,
                                      const std::string& scratch) {
  const std::vector<FunctionCode> parts = balancedParts(code, decodeJobs());
  std::vector<std::future<std::vector<Decoded>>> running;
  for (size_t i = 0; i < parts.size(); ++i) {
    running.push_back(std::async(std::launch::async, decodeFunctions, std::cref(nvdisasm), sm, std::cref(parts[i]),
                                 scratch + "." + std::to_string(i)));
  }
  std::vector<Decoded> out;
  for (auto& r : running) {
    for (Decoded& d : r.get()) out.push_back(std::move(d));
  }
  return out;
}

// Every function code nvdisasm decoded in this process, by SM and code bytes, with where its
// instructions lie in the text of the run that decoded it: the steps after a run (the duplicates'
// or the second run's counts, then the half-precision and tensor FLOPs) decode each code once
// (the PyTorch step: 42 functions for the counts, 11 of them again for the FLOPs, 0.5 s of
// nvdisasm, on an H100).
class DecodedCodes {
 public:
  struct Place {
    std::shared_ptr<const std::string> text;
    uint64_t begin = 0, end = 0;
  };
  void keep(int sm, const std::vector<Decoded>& decoded) {
    std::lock_guard lock(mu_);
    for (const Decoded& d : decoded) {
      for (size_t i = 0; i < d.ranges.size(); ++i) places_[{sm, d.codes[i]}] = {d.text, d.ranges[i].begin, d.ranges[i].end};
    }
  }
  const Place* find(int sm, const std::string& code) const {  // entries are never removed
    std::lock_guard lock(mu_);
    auto it = places_.find({sm, code});
    return it == places_.end() ? nullptr : &it->second;
  }

 private:
  mutable std::mutex mu_;  // the prefetch's thread while the program runs, the steps after it
  std::map<std::pair<int, std::string>, Place> places_;
};

DecodedCodes& decodedCodes() {
  static DecodedCodes codes;
  return codes;
}

// The functions' decoded code: what this process decoded before taken as it was (a function's
// range in that text under the name asked for; two names of one code in separate entries, as
// ranges must not overlap), the rest decoded now.
std::vector<Decoded> decodeOnce(const std::string& nvdisasm, int sm, const FunctionCode& code,
                                const std::string& scratch) {
  FunctionCode fresh;
  std::vector<Decoded> out;
  for (const auto& [name, bytes] : code) {
    const DecodedCodes::Place* place = decodedCodes().find(sm, bytes);
    if (place == nullptr) {
      fresh.emplace_back(name, bytes);
      continue;
    }
    auto same_text = std::find_if(out.begin(), out.end(), [&](const Decoded& d) {
      return d.text == place->text &&
             std::none_of(d.ranges.begin(), d.ranges.end(), [&](const core::CodeRange& r) { return r.begin == place->begin; });
    });
    if (same_text == out.end()) same_text = out.insert(out.end(), Decoded{place->text, {}, {}});
    same_text->ranges.push_back({name, place->begin, place->end});
    same_text->codes.push_back(bytes);
  }
  if (fresh.empty()) return out;
  std::vector<Decoded> decoded = decodeInParallel(nvdisasm, sm, fresh, scratch);
  decodedCodes().keep(sm, decoded);
  for (Decoded& d : decoded) out.push_back(std::move(d));
  return out;
}

// The functions' half-precision and tensor instructions.
std::map<std::string, core::SassHalfCounts> halfOpsOf(const std::string& nvdisasm, int sm, const FunctionCode& code,
                                                      const std::string& scratch) {
  std::map<std::string, core::SassHalfCounts> out;
  for (const Decoded& d : decodeOnce(nvdisasm, sm, code, scratch)) {
    for (const auto& [name, classes] : core::parseNvdisasmHalfOpsByRange(*d.text, d.ranges)) {
      auto& merged = out[name];
      for (const auto& [cls, count] : classes) merged[cls] += count;
    }
  }
  return out;
}

// A function counted by SASS patching is named by its module's CRC and its name.
std::string codeKey(uint32_t crc, const std::string& name) { return std::to_string(crc) + " " + name; }

// The CRC in a cubin's file name as the collector saved it under SASS patching ("...crc123.cubin").
std::optional<uint32_t> crcOfFile(const fs::path& p) {
  const std::string stem = p.stem().string();
  const size_t at = stem.rfind(".crc");
  if (at == std::string::npos) return std::nullopt;
  return static_cast<uint32_t>(std::strtoul(stem.c_str() + at + 4, nullptr, 10));
}

using CountedFunctions = std::set<std::pair<uint32_t, std::string>>;  // (cubin CRC, name)

// The code of each counted function, cut from the saved cubin with its CRC (other cubins are not
// read), under codeKey.
FunctionCode codeOfCounted(const std::string& dir, const CountedFunctions& wanted) {
  std::set<uint32_t> crcs;
  for (const auto& w : wanted) crcs.insert(w.first);
  FunctionCode out;
  forEachSavedFunction(
      dir,
      [&](const fs::path& file) {
        const std::optional<uint32_t> crc = crcOfFile(file);
        return crc && crcs.count(*crc) != 0;
      },
      [&](const fs::path& file, const core::CubinFunction& f, const std::string& bytes) {
        const uint32_t crc = *crcOfFile(file);
        if (wanted.count({crc, f.name}) != 0) out.emplace_back(codeKey(crc, f.name), bytes.substr(f.code_offset, f.code_size));
      });
  return out;
}

CountedFunctions countedFunctions(const std::vector<core::SassPcLaunch>& launches) {
  CountedFunctions out;
  for (const core::SassPcLaunch& l : launches) {
    for (const core::SassPcFunction& f : l.functions) out.emplace(f.cubin_crc, f.name);
  }
  return out;
}

// Each counted function's instructions by offset, under codeKey; functions nvdisasm could not
// read are left out.
std::map<std::string, core::SassInstructions> instructionsOfCounted(const std::string& nvdisasm, int sm,
                                                                    const std::string& cubin_dir,
                                                                    const CountedFunctions& wanted) {
  StepTimer timer;
  const FunctionCode code = codeOfCounted(cubin_dir, wanted);
  timer.done("  SASS patching: cut the counted functions from the cubins");
  std::map<std::string, core::SassInstructions> out;
  for (const Decoded& d : decodeOnce(nvdisasm, sm, code, cubin_dir + "/functions.code")) {
    for (auto& [key, by_pc] : core::parseNvdisasmInstructionsByRange(*d.text, d.ranges)) {
      if (!by_pc.empty()) out[key].merge(by_pc);
    }
  }
  timer.done("  SASS patching: nvdisasm");
  return out;
}

// Each launch's counters under both its correlation ids; launches whose code is missing are left
// out, counted in `missed` with the first reason in `why`.
core::LaunchRawCounters countersByLaunch(const std::vector<core::SassPcLaunch>& launches,
                                         const std::map<std::string, core::SassInstructions>& instructions,
                                         size_t& missed, std::string& why) {
  const core::SassCodeLookup lookup = [&](const std::string& name, uint32_t crc) -> const core::SassInstructions* {
    auto it = instructions.find(codeKey(crc, name));
    return it == instructions.end() ? nullptr : &it->second;
  };
  core::LaunchRawCounters out;
  for (const core::SassPcLaunch& l : launches) {
    std::string reason;
    const auto raw = core::sassCountersOfLaunch(l, lookup, reason);
    if (!raw) {
      if (missed++ == 0) why = reason;
      continue;
    }
    out[l.correlation_id] = *raw;
    if (l.nested_correlation_id != 0) out[l.nested_correlation_id] = *raw;
  }
  return out;
}

}  // namespace

core::Expected<core::LaunchRawCounters> sassCountersOfPatchedRun(const std::string& db_path,
                                                                 const std::string& pc_file,
                                                                 const std::string& cubin_dir, std::string& summary) {
  auto launches = core::parseSassPcText(readFile(pc_file));
  if (!launches) return core::makeError(pc_file + ": " + launches.error());
  const std::string nvdisasm = core::findNvdisasm();
  if (nvdisasm.empty()) {
    return core::makeError("nvdisasm (CUDA toolkit) was not found to read the counted functions' SASS; set FPROF_NVDISASM");
  }
  const auto sm = core::deviceSmOf(db_path);
  if (!sm) return core::makeError(sm.error());
  const CountedFunctions wanted = countedFunctions(*launches);
  const auto instructions = instructionsOfCounted(nvdisasm, *sm, cubin_dir, wanted);
  size_t missed = 0;
  std::string why;
  core::LaunchRawCounters out = countersByLaunch(*launches, instructions, missed, why);
  summary = std::to_string(launches->size() - missed) + " of " + std::to_string(launches->size()) +
            " counted launches joined with the SASS of " + std::to_string(instructions.size()) + " of " +
            std::to_string(wanted.size()) + " functions" + (missed > 0 ? " (first miss: " + why + ")" : std::string());
  return out;
}

std::string applySassStep(const std::string& db_path, const std::string& cubin_dir) {
  StepTimer timer;
  auto half = core::functionsNeedingSass(db_path);
  if (!half) return "half-precision FLOPs not completed: " + half.error();
  auto tensor = core::functionsNeedingTensorSass(db_path);
  if (!tensor) return "tensor FLOPs not completed: " + tensor.error();
  std::set<std::string> needed(half->begin(), half->end());
  needed.insert(tensor->begin(), tensor->end());
  if (needed.empty()) return {};
  const std::string nvdisasm = core::findNvdisasm();
  const auto sm = core::deviceSmOf(db_path);
  timer.done("  SASS: the functions that need it");
  std::map<std::string, core::SassHalfCounts> sass;
  std::string why_missing;
  if (nvdisasm.empty()) {
    why_missing = "unknown: nvdisasm (CUDA toolkit) was not found to read the function's SASS; set FPROF_NVDISASM";
  } else {
    why_missing = "unknown: the function's SASS was not found among the modules the program loaded";
    const auto code = codeOf(cubin_dir, needed);
    timer.done("  SASS: cut the functions from the cubins");
    if (sm && !code.empty()) sass = halfOpsOf(nvdisasm, *sm, code, cubin_dir + "/functions.code");
    timer.done("  SASS: nvdisasm");
  }
  if (core::Status s = core::applySassHalfFlops(db_path, sass, why_missing); !s) {
    return "half-precision FLOPs not completed: " + s.error();
  }
  if (core::Status s = core::applySassTensorFlops(db_path, sass, sm ? *sm : 0, why_missing); !s) {
    return "tensor FLOPs not completed: " + s.error();
  }
  timer.done("  SASS: FLOPs into the database");
  return "read the SASS of " + std::to_string(sass.size()) + " of " + std::to_string(needed.size()) +
         " functions (" + std::to_string(half->size()) + " with half-precision instructions: fp16/bf16 FLOPs per lane; " +
         std::to_string(tensor->size()) + " with tensor-pipe work: tensor FLOPs per cycle)";
}

std::string patchedRunProgress(const std::string& pc_file) { return core::sassPcProgressText(readFile(pc_file)); }

namespace {

// The device's SM the collector marked in the cubin folder ("device.sm90"), where there is one.
std::optional<int> markedSm(const std::string& cubin_dir) {
  std::set<int> sms;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cubin_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("device.sm", 0) == 0) sms.insert(std::atoi(name.c_str() + 9));
  }
  if (sms.size() != 1 || *sms.begin() <= 0) return std::nullopt;
  return *sms.begin();
}


// The whole lines of `file` after byte `from` (a line still being written is left for later);
// `from` moves past them. A file now shorter than `from` was written anew: read from its start.
std::string wholeLinesAfter(const fs::path& file, uint64_t& from) {
  std::error_code ec;
  if (const uintmax_t size = fs::file_size(file, ec); !ec && size < from) from = 0;
  std::ifstream in(file, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(from));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t end = text.rfind('\n');
  if (end == std::string::npos) return {};
  text.resize(end + 1);
  from += text.size();
  return text;
}

}  // namespace

SassPrefetch::SassPrefetch(std::string cubin_dir) : cubin_dir_(std::move(cubin_dir)), nvdisasm_(core::findNvdisasm()) {
  if (!nvdisasm_.empty() && !cubin_dir_.empty()) thread_ = std::thread([this] { watch(); });
}

SassPrefetch::~SassPrefetch() { finish(); }

void SassPrefetch::finish() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (!thread_.joinable()) return;
  thread_.join();
  if (core::env::Parser(core::env::processEnvironment()).flag(core::env::Var::kSelfTiming)) {
    std::fprintf(stderr, "[fprof] self-timing: while the program ran: %zu counted functions decoded in %.1f ms\n",
                 functions_decoded_, decode_seconds_ * 1e3);
  }
}

// Every 200 ms until finish(): whatever the duplicates counted since.
void SassPrefetch::watch() {
  std::unique_lock lock(mu_);
  while (!wake_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stopping_; })) {
    lock.unlock();
    decodeNewFunctions();
    lock.lock();
  }
}

// The names on the per-PC files' function lines ("F <crc> <name>") not seen before.
std::set<std::string> SassPrefetch::newCountedNames() {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cubin_dir_, ec)) {
    if (e.path().extension() != ".pcs") continue;  // every database's, in the run's own folder
    const std::string text = wholeLinesAfter(e.path(), read_up_to_[e.path().string()]);
    size_t at = 0;
    for (size_t end; (end = text.find('\n', at)) != std::string::npos; at = end + 1) {
      if (text.compare(at, 2, "F ") != 0) continue;
      const size_t name_at = text.find(' ', at + 2);
      if (name_at == std::string::npos || name_at > end) continue;
      std::string name = text.substr(name_at + 1, end - name_at - 1);
      if (names_seen_.insert(name).second) out.insert(std::move(name));
    }
  }
  return out;
}

void SassPrefetch::decodeNewFunctions() {
  if (sm_ == 0) sm_ = markedSm(cubin_dir_).value_or(0);
  if (sm_ == 0) return;
  const std::set<std::string> names = newCountedNames();
  if (names.empty()) return;
  const auto started = std::chrono::steady_clock::now();
  const FunctionCode code = codeOf(cubin_dir_, names, /*only_kept=*/true);
  if (!code.empty()) (void)decodeOnce(nvdisasm_, sm_, code, cubin_dir_ + "/prefetch.code");
  functions_decoded_ += code.size();
  decode_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

}  // namespace fprof::runner
