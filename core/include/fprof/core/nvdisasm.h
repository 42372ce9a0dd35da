// A cubin's functions and their SASS: the symbol table and each function's code read from the ELF
// bytes, and the text the CUDA toolkit's nvdisasm prints for raw code (run as a child process).
// Used after a metrics run by the SASS step of `fprof run`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fprof::core {

// nvdisasm from FPROF_NVDISASM, PATH, $CUDA_HOME/bin or /usr/local/cuda/bin; "" if none.
std::string findNvdisasm();

// What `nvdisasm -b SM<sm>` prints for the raw instructions in the file at `code_path` (functions'
// code cut from their cubins: nvdisasm took 18 s for a whole 20 MB PyTorch cubin and 0.3 s for
// one kernel's code on the H100 machine). The child runs without the CUDA and preload injection
// variables of a profiled program. "" on failure.
std::string disassembleRawCode(const std::string& nvdisasm, const std::string& code_path, int sm);

struct CubinFunction {
  uint32_t symbol_index = 0;  // in the ELF .symtab
  std::string name;           // mangled
  uint64_t code_offset = 0;   // where its instructions are in the ELF bytes
  uint64_t code_size = 0;     // their size in bytes (0: unknown)
};

// One entry of a cubin's ELF symbol table, with the section it is defined in.
struct CubinSymbol {
  static constexpr uint8_t kObject = 1;    // STT_OBJECT: a variable
  static constexpr uint8_t kFunction = 2;  // STT_FUNC
  uint32_t symbol_index = 0;
  std::string name;
  uint8_t type = 0;     // STT_*
  uint8_t binding = 0;  // STB_*
  uint8_t other = 0;    // st_other (nvcc marks __managed__ variables there)
  bool defined = false;  // false: undefined (st_shndx 0), e.g. vprintf or malloc called from device code
  uint64_t value = 0;   // the offset in its section
  uint64_t size = 0;
  std::string section;  // its section's name (".nv.global", ".text.<function>", ...)
  bool section_writable = false;  // SHF_WRITE: device memory the module's code may store to
  uint64_t section_offset = 0, section_size = 0;  // of its section in the ELF bytes
};

// Every symbol of a 64-bit little-endian ELF cubin; empty when the bytes are no such ELF.
std::vector<CubinSymbol> cubinSymbols(std::string_view elf);

// The function symbols (STT_FUNC with code) of a 64-bit little-endian ELF cubin, and where their
// code is; empty when the bytes are no such ELF (a PTX module, a truncated file).
std::vector<CubinFunction> cubinFunctions(std::string_view elf);

}  // namespace fprof::core
