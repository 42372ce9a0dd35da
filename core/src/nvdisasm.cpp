// Cubin symbols and nvdisasm (see nvdisasm.h).
#include "fprof/core/nvdisasm.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "fprof/core/child_output.h"
#include "fprof/core/environment.h"

namespace fprof::core {
namespace {

namespace fs = std::filesystem;

bool executable(const fs::path& p) { return ::access(p.c_str(), X_OK) == 0; }

// Its standard output when it exits with 0, else "".
std::string outputOf(std::vector<std::string> args) {
  const Expected<ChildOutput> out = childOutput(std::move(args), ChildErrors::kDiscarded);
  return out && out->exit_status == 0 ? out->text : std::string();
}

template <typename T>
bool readAt(std::string_view bytes, uint64_t offset, T& out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, bytes.data() + offset, sizeof(T));
  return true;
}

}  // namespace

std::string findNvdisasm() {
  if (const std::string asked = env::Parser(env::processEnvironment()).text(env::Var::kNvdisasm); !asked.empty()) {
    return executable(asked) ? asked : "";
  }
  std::vector<fs::path> candidates;
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    for (size_t start = 0; start <= p.size();) {
      const size_t colon = p.find(':', start);
      const std::string d = p.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!d.empty()) candidates.push_back(fs::path(d) / "nvdisasm");
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  if (const char* home = std::getenv("CUDA_HOME")) candidates.push_back(fs::path(home) / "bin" / "nvdisasm");
  candidates.push_back("/usr/local/cuda/bin/nvdisasm");
  for (const fs::path& c : candidates) {
    if (executable(c)) return c.string();
  }
  return {};
}

std::string disassembleRawCode(const std::string& nvdisasm, const std::string& code_path, int sm) {
  if (sm <= 0) return {};
  return outputOf({nvdisasm, "-b", "SM" + std::to_string(sm), code_path});
}

namespace {

struct ElfSection {
  uint32_t name = 0, type = 0, link = 0;
  uint64_t flags = 0, offset = 0, size = 0, entsize = 0;
};

// The section headers of a 64-bit little-endian ELF; empty when the bytes are no such ELF.
std::vector<ElfSection> elfSections(std::string_view elf) {
  // ELF64 little-endian: e_shoff at 0x28, e_shentsize at 0x3A, e_shnum at 0x3C.
  std::vector<ElfSection> out;
  if (elf.size() < 0x40 || elf.substr(0, 4) != "\x7f" "ELF" || elf[4] != 2 || elf[5] != 1) return out;
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0;
  if (!readAt(elf, 0x28, shoff) || !readAt(elf, 0x3A, shentsize) || !readAt(elf, 0x3C, shnum) || shentsize < 64) {
    return out;
  }
  for (uint32_t i = 0; i < shnum; ++i) {
    const uint64_t at = shoff + uint64_t{i} * shentsize;
    ElfSection s;
    if (!readAt(elf, at, s.name) || !readAt(elf, at + 4, s.type) || !readAt(elf, at + 8, s.flags) ||
        !readAt(elf, at + 24, s.offset) || !readAt(elf, at + 32, s.size) || !readAt(elf, at + 40, s.link) ||
        !readAt(elf, at + 56, s.entsize)) {
      return {};
    }
    out.push_back(s);
  }
  return out;
}

// The NUL-terminated string at `offset` of the string table `table`; "" past its end.
std::string_view stringAt(std::string_view elf, const ElfSection& table, uint64_t offset) {
  if (table.offset > elf.size() || offset >= table.size) return {};
  const std::string_view names = elf.substr(table.offset, std::min<uint64_t>(table.size, elf.size() - table.offset));
  if (offset >= names.size()) return {};
  const size_t end = names.find('\0', offset);
  return end == std::string_view::npos ? std::string_view{} : names.substr(offset, end - offset);
}

}  // namespace

std::vector<CubinSymbol> cubinSymbols(std::string_view elf) {
  std::vector<CubinSymbol> out;
  const std::vector<ElfSection> sections = elfSections(elf);
  uint16_t shstrndx = 0;
  const bool section_names = readAt(elf, 0x3E, shstrndx) && shstrndx < sections.size();
  constexpr uint32_t kSymtab = 2;
  for (const ElfSection& symtab : sections) {
    if (symtab.type != kSymtab || symtab.entsize < 24 || symtab.link >= sections.size()) continue;
    const ElfSection& strtab = sections[symtab.link];
    for (uint64_t k = 0; k < symtab.size / symtab.entsize; ++k) {
      const uint64_t at = symtab.offset + k * symtab.entsize;
      uint32_t name = 0;
      uint8_t info = 0, other = 0;
      uint16_t shndx = 0;
      CubinSymbol s;
      if (!readAt(elf, at, name) || !readAt(elf, at + 4, info) || !readAt(elf, at + 5, other) ||
          !readAt(elf, at + 6, shndx) || !readAt(elf, at + 8, s.value) || !readAt(elf, at + 16, s.size)) {
        break;
      }
      s.symbol_index = static_cast<uint32_t>(k);
      s.name = std::string(stringAt(elf, strtab, name));
      s.type = info & 0xf;
      s.binding = info >> 4;
      s.other = other;
      s.defined = shndx != 0;
      if (s.defined && shndx < sections.size()) {
        const ElfSection& home = sections[shndx];
        if (section_names) s.section = std::string(stringAt(elf, sections[shstrndx], home.name));
        s.section_writable = (home.flags & 0x1) != 0;  // SHF_WRITE
        s.section_offset = home.offset;
        s.section_size = home.size;
      }
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::vector<CubinFunction> cubinFunctions(std::string_view elf) {
  std::vector<CubinFunction> out;
  for (const CubinSymbol& s : cubinSymbols(elf)) {
    if (s.type != CubinSymbol::kFunction || !s.defined || s.name.empty()) continue;
    CubinFunction f{s.symbol_index, s.name};
    // A function symbol's value is its offset in its section (relocatable and executable cubins).
    if (s.value <= s.section_size && s.section_offset <= elf.size()) {
      const uint64_t length = s.size > 0 ? std::min(s.size, s.section_size - s.value) : s.section_size - s.value;
      if (s.section_offset + s.value + length <= elf.size()) {
        f.code_offset = s.section_offset + s.value;
        f.code_size = length;
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace fprof::core
