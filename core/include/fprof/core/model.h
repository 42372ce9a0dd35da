// The neutral profile model: what the collector produces and every other layer reads. Nothing
// here knows CUPTI, SQLite or a GUI. Field names carry their units (STYLE.md rule 4).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fprof::core {

// Static properties of one GPU, as the CUDA driver reports them.
struct DeviceInfo {
  uint32_t process_id = 0;
  uint32_t id = 0;  // CUDA device ordinal in the profiled process
  std::string name;
  std::string uuid;
  int compute_major = 0;
  int compute_minor = 0;
  int sm_count = 0;
  int max_threads_per_sm = 0;
  int max_threads_per_block = 0;
  int max_blocks_per_sm = 0;
  int max_warps_per_sm = 0;  // derived: max_threads_per_sm / warp_size
  int regs_per_sm = 0;
  int regs_per_block = 0;
  int warp_size = 32;
  int64_t shared_per_sm_bytes = 0;
  int64_t shared_per_block_bytes = 0;
  int64_t shared_per_block_optin_bytes = 0;
  int64_t reserved_shared_per_block_bytes = 0;
  int64_t l2_bytes = 0;
  int64_t global_memory_bytes = 0;
  int memory_bus_width_bits = 0;
  int64_t memory_clock_khz = 0;  // 0 where the driver does not report it
  int64_t sm_clock_khz = 0;
};

// One process that was profiled (a merged database holds several).
struct ProcessInfo {
  uint32_t id = 0;  // row id in this database
  int64_t pid = 0;
  std::string host;
  std::optional<int> rank;        // RANK / OMPI_COMM_WORLD_RANK / SLURM_PROCID
  std::optional<int> local_rank;  // LOCAL_RANK / OMPI_COMM_WORLD_LOCAL_RANK / SLURM_LOCALID
  std::string command_line;
  int64_t start_unix_ns = 0;
};

// Numeric facts of one kernel execution (one launch; a graph launch yields one per kernel node).
struct KernelLaunch {
  uint32_t process_id = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  uint32_t thread_id = 0;  // host thread that launched it (0 if unknown)
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t grid_x = 0, grid_y = 0, grid_z = 0;
  int32_t block_x = 0, block_y = 0, block_z = 0;
  int32_t cluster_x = 0, cluster_y = 0, cluster_z = 0;  // 0 = no cluster
  int32_t registers_per_thread = 0;
  int32_t static_shared_bytes = 0;
  int32_t dynamic_shared_bytes = 0;
  int64_t local_bytes_per_thread = 0;  // stack frame + spills, per thread
  int64_t local_bytes_total = 0;       // local memory reserved for the launch
  int64_t shared_carveout_bytes = 0;   // L1/shared split the driver chose (0 if unknown)
  std::optional<double> theoretical_occupancy;  // 0..1, from launch config and device limits
  std::optional<int> theoretical_blocks_per_sm;
  uint32_t graph_id = 0;  // 0 = not a graph launch
  uint64_t graph_node_id = 0;
  std::optional<uint64_t> nvtx_range_key;  // innermost NVTX range open at launch (nvtx_range.id)
  // Launched with programmatic stream serialization (programmatic dependent launch): its blocks
  // may start, and wait in griddepcontrol.wait, while the kernel before it in the stream still runs.
  bool programmatic_launch = false;
  // Derived when a profile is read (settleDependencyWaits), never stored: the part of
  // [start_ns, end_ns] before the stream's previous kernel ended, which a programmatic launch
  // spends waiting on it. The kernel's own time excludes it.
  int64_t dependency_wait_ns = 0;

  // The time the kernel adds to its stream: end_ns - start_ns less any dependency wait.
  int64_t durationNs() const { return end_ns - ownStartNs(); }
  int64_t ownStartNs() const { return start_ns + dependency_wait_ns; }
  int64_t threadsPerBlock() const { return int64_t{block_x} * block_y * block_z; }
  int64_t blocks() const { return int64_t{grid_x} * grid_y * grid_z; }
};

// What the collector produces for one kernel: the numbers plus its strings.
struct KernelRecord : KernelLaunch {
  std::string name;               // mangled, as the driver reports it
  std::string demangled_name;     // equal to name where demangling fails (C kernels)
  std::string occupancy_limiter;  // "warps", "registers", "shared", "blocks" or empty
  std::string launch_api;         // e.g. "cudaLaunchKernel", "cuLaunchKernelEx"
  std::string nvtx_path;          // "domain::outer/inner" path at launch, "" if none
};

// What a reader returns for one kernel: strings are ids into Profile::strings, so a million
// kernels load and group quickly.
struct KernelRow : KernelLaunch {
  int64_t id = 0;
  uint32_t name_id = 0;
  uint32_t demangled_id = 0;
  uint32_t occupancy_limiter_id = 0;
  uint32_t launch_api_id = 0;
  std::optional<uint32_t> nvtx_path_id;
};

// One argument of a kernel launch that may be a device pointer (8-byte parameters).
struct KernelArgRecord {
  uint32_t correlation_id = 0;  // joins the launch to its kernel record
  uint32_t process_id = 0;
  int32_t index = 0;
  int32_t offset_bytes = 0;
  int32_t size_bytes = 0;
  uint64_t value = 0;
};

// One NVTX range. Push/pop ranges nest per thread; start/end ranges are process-wide.
struct NvtxRangeRecord {
  uint64_t key = 0;  // collector-assigned, unique per process
  uint32_t process_id = 0;
  std::optional<uint64_t> parent_key;
  std::string domain;  // "" for the default domain
  std::string message;
  std::optional<uint64_t> payload;
  uint32_t thread_id = 0;
  int32_t depth = 0;
  int64_t start_ns = 0;
  std::optional<int64_t> end_ns;  // none if still open when the process ended
  bool push_pop = true;           // false for start/end ranges
};

// An immutable text in one allocation of its length and 4 bytes, 8 bytes where empty (a
// std::string takes 32 bytes besides its allocation). Profiles hold millions of NVTX messages.
// A text may instead be borrowed from a TextBlock (below), which then outlives it.
class PackedText {
 public:
  PackedText() = default;
  PackedText(std::string_view s) { assign(s); }                          // NOLINT: converts as std::string does
  PackedText(const std::string& s) : PackedText(std::string_view(s)) {}  // NOLINT
  PackedText(const char* s) : PackedText(std::string_view(s)) {}         // NOLINT
  PackedText(const PackedText& o) { assign(o.view()); }  // a copy owns its text
  PackedText(PackedText&& o) noexcept : bits_(std::exchange(o.bits_, 0)) {}
  PackedText& operator=(PackedText o) noexcept {
    std::swap(bits_, o.bits_);
    return *this;
  }
  ~PackedText() {
    if (bits_ != 0 && (bits_ & kBorrowed) == 0) delete[] block();
  }

  std::string_view view() const { return bits_ ? std::string_view(block() + kHeader, size()) : std::string_view(); }
  operator std::string_view() const { return view(); }  // NOLINT: reads as a string_view
  std::string str() const { return std::string(view()); }
  size_t size() const {
    uint32_t n = 0;
    if (bits_) std::memcpy(&n, block(), kHeader);
    return n;
  }
  bool empty() const { return bits_ == 0; }
  friend bool operator==(const PackedText& a, std::string_view b) { return a.view() == b; }
  friend std::ostream& operator<<(std::ostream& os, const PackedText& t) { return os << t.view(); }

 private:
  friend class TextBlock;
  friend class TextArena;
  static constexpr size_t kHeader = sizeof(uint32_t);
  // The block's address, its lowest bit set where the block is a TextBlock's (blocks of their own
  // come from new[], aligned; a TextBlock places texts at even offsets).
  static constexpr uintptr_t kBorrowed = 1;
  char* block() const { return reinterpret_cast<char*>(bits_ & ~kBorrowed); }
  // Texts come from SQLite, which holds none of 4 GiB.
  static uint32_t lengthOf(std::string_view s) { return static_cast<uint32_t>(std::min<size_t>(s.size(), UINT32_MAX)); }
  static void write(char* block, std::string_view s, uint32_t n) {
    std::memcpy(block, &n, kHeader);
    std::memcpy(block + kHeader, s.data(), n);
  }
  void assign(std::string_view s) {
    if (s.empty()) return;
    const uint32_t n = lengthOf(s);
    char* b = new char[kHeader + n];
    write(b, s, n);
    bits_ = reinterpret_cast<uintptr_t>(b);
  }
  uintptr_t bits_ = 0;
};

// Texts one after the other in one allocation, sized for them up front. Texts of PackedText's
// own are as many allocations among the others on the heap: letting most of a million of them go
// leaves holes that later allocations of other sizes cannot use, and the memory stays taken.
// Moved there, the texts kept leave the old ones' place free as a whole.
class TextBlock {
 public:
  TextBlock() = default;
  explicit TextBlock(size_t bytes) : bytes_(bytes ? new char[bytes] : nullptr), capacity_(bytes) {}
  // What holding `s` takes of a block.
  static size_t bytesFor(std::string_view s) {
    return s.empty() ? 0 : (PackedText::kHeader + PackedText::lengthOf(s) + 1) & ~size_t{1};
  }
  bool fits(std::string_view s) const { return bytesFor(s) <= capacity_ - used_; }
  // `s` in the block, borrowed from it: the block must outlive the text and its moves (copies own
  // theirs). A text of its own where the block has no room left.
  PackedText hold(std::string_view s) {
    const size_t need = bytesFor(s);
    if (need == 0 || need > capacity_ - used_) return PackedText(s);
    char* at = bytes_.get() + used_;
    PackedText::write(at, s, PackedText::lengthOf(s));
    used_ += need;
    PackedText t;
    t.bits_ = reinterpret_cast<uintptr_t>(at) | PackedText::kBorrowed;
    return t;
  }

 private:
  friend class TextArena;
  std::unique_ptr<char[]> bytes_;
  size_t capacity_ = 0, used_ = 0;
};

// Texts read in bulk, in TextBlocks of a few MB filled one after the other: a million texts
// without a million allocations (malloc takes 16 bytes more of each of a hundred characters).
// The texts borrow from it: it must outlive them.
class TextArena {
 public:
  PackedText hold(std::string_view s) {
    if (s.empty()) return {};
    if (blocks_.empty() || !blocks_.back().fits(s)) blocks_.emplace_back(std::max(kBlockBytes, TextBlock::bytesFor(s)));
    return blocks_.back().hold(s);
  }
  // Keeps only `texts` of those it holds: they are moved to the front of its blocks, in the order
  // they were held, and the blocks left empty go. Its other texts are never to be read again;
  // texts in `texts` held elsewhere stay as they are.
  void keepOnly(const std::vector<PackedText*>& texts);

 private:
  static constexpr size_t kBlockBytes = size_t{4} << 20;
  std::vector<TextBlock> blocks_;
};

// What a reader returns for one NVTX range: the record's fields in 96 bytes instead of 152, its
// texts packed (a PyTorch run under emit_nvtx records several ranges of about 100 characters a
// kernel).
struct NvtxRangeRow {
  NvtxRangeRow() = default;
  NvtxRangeRow(const NvtxRangeRecord& r) : NvtxRangeRow(r, nullptr) {}  // NOLINT: a record is a row
  // Its message held in `messages` where given (which must then outlive the row); none where
  // `with_message` is false.
  NvtxRangeRow(const NvtxRangeRecord& r, TextArena* messages, bool with_message = true)
      : key(r.key),
        process_id(r.process_id),
        thread_id(r.thread_id),
        parent_key(r.parent_key),
        domain(r.domain),
        message(!with_message ? PackedText() : messages ? messages->hold(r.message) : PackedText(r.message)),
        payload(r.payload),
        start_ns(r.start_ns),
        end_ns(r.end_ns),
        depth(r.depth),
        push_pop(r.push_pop) {}

  uint64_t key = 0;
  uint32_t process_id = 0;
  uint32_t thread_id = 0;
  std::optional<uint64_t> parent_key;
  PackedText domain;
  PackedText message;
  std::optional<uint64_t> payload;
  int64_t start_ns = 0;
  std::optional<int64_t> end_ns;
  int32_t depth = 0;
  bool push_pop = true;
};

struct MemcpyRecord {
  uint32_t process_id = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t bytes = 0;
  std::string copy_kind;  // "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", ...
  std::string src_kind;   // "pageable", "pinned", "device", "managed", ...
  std::string dst_kind;
  uint32_t graph_id = 0;
};

// The addresses of one device-to-device copy (memcpy_address), from its driver API call.
struct MemcpyAddressRecord {
  uint32_t process_id = 0;
  uint32_t correlation_id = 0;
  uint64_t src_address = 0;
  uint64_t dst_address = 0;
  int64_t bytes = 0;
};

struct MemsetRecord {
  uint32_t process_id = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t bytes = 0;
  uint32_t value = 0;
  std::string memory_kind;
  uint32_t graph_id = 0;
};

// A device-memory allocation or release.
struct MemoryEventRecord {
  uint32_t process_id = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;  // 0 unless stream-ordered
  uint32_t correlation_id = 0;
  int64_t timestamp_ns = 0;
  bool is_alloc = true;
  uint64_t address = 0;
  int64_t bytes = 0;
  std::string memory_kind;  // "device", "managed", "pinned", ...
};

// Something the collector wants the user to know (degraded mode, dropped records, ...).
struct CollectorEventRecord {
  uint32_t process_id = 0;
  int64_t timestamp_ns = 0;
  std::string severity;  // "info", "warning", "error"
  std::string message;
};

inline constexpr const char* kCounterSourceProfiled = "profiled";
inline constexpr const char* kCounterSourceSameSignature = "same_signature";

// Hardware-counter results for one kernel (metrics mode). Every field is optional: a counter that
// was not collected is absent, never 0. FLOPs count an FMA as 2; tensor FLOPs are calibrated so a
// GEMM of M*N*K reads 2*M*N*K.
struct KernelCounters {
  int64_t kernel_id = 0;  // kernel.id
  std::optional<double> dram_read_bytes;
  std::optional<double> dram_write_bytes;
  std::optional<double> l2_bytes;
  std::optional<double> l1_bytes;
  std::optional<double> flops_fp64;
  std::optional<double> flops_fp32;
  std::optional<double> flops_fp16;
  std::optional<double> flops_bf16;
  std::optional<double> flops_tensor_fp16;
  std::optional<double> flops_tensor_bf16;
  std::optional<double> flops_tensor_tf32;
  std::optional<double> flops_tensor_fp8;
  std::optional<double> flops_tensor_fp64;
  std::optional<double> ops_tensor_int8;
  std::optional<double> achieved_occupancy;  // 0..1
  std::optional<double> local_load_bytes;
  std::optional<double> local_store_bytes;
  std::optional<double> instructions;
  std::optional<double> gpu_time_ns;  // from the counter, not the trace (replay may perturb timing)

  // Where the values came from (kernel_counter.source ...): profiled on this launch, or copied
  // from an identical launch that was (source_kernel_id).
  std::string source = kCounterSourceProfiled;
  std::optional<int64_t> source_kernel_id;
  std::optional<bool> signature_varies;  // profiled launches of the signature disagreed
  std::string half_flops_method;         // "" = no half-precision instructions ran
  std::string tensor_flops_method;       // "" = tensor FLOPs measured directly (ops_path) or none ran

  std::optional<double> dramBytes() const {
    if (!dram_read_bytes && !dram_write_bytes) return std::nullopt;
    return dram_read_bytes.value_or(0) + dram_write_bytes.value_or(0);
  }
};

// A metrics-mode kernel without counters, and why (kernel_counter_missing).
struct KernelCounterMissing {
  int64_t kernel_id = 0;
  std::string reason;
};

// Facts the driver reports once per kernel function (function table). Names are mangled.
struct FunctionRecord {
  uint32_t process_id = 0;
  std::string name;
  std::optional<int> registers_per_thread;  // CU_FUNC_ATTRIBUTE_NUM_REGS, as ptxas -v says
  std::optional<int64_t> local_bytes_per_thread;
  std::optional<int64_t> static_shared_bytes;
  std::optional<int64_t> const_bytes;
  std::optional<int> max_threads_per_block;
  std::optional<int> binary_version;
  std::optional<int> ptx_version;
};

inline constexpr const char* kArgRoleWrite = "write";
inline constexpr const char* kArgRoleRead = "read";
inline constexpr const char* kArgRoleNotPointer = "not_pointer";

// What one pointer argument of a function does, measured (function_arg).
struct FunctionArgRecord {
  uint32_t process_id = 0;
  std::string name;  // mangled function name
  int32_t arg_index = 0;
  std::string role;    // kArgRole*
  std::string method;  // how it was obtained
  std::optional<int64_t> sampled_bytes;
  std::optional<uint32_t> correlation_id;
  int32_t offset_bytes = 0;  // of the pointer in the parameter buffer (several may share an arg_index)
};

// Static count of one half-precision opcode class in a function's SASS (function_sass_op).
struct FunctionSassOpRecord {
  uint32_t process_id = 0;
  std::string name;    // mangled function name
  std::string opcode;  // e.g. "HFMA2", "HFMA2.scalar", "HADD2.F32.convert"
  int64_t static_count = 0;
};

// What a reader returns for the function tables: names are ids into Profile::strings.
struct FunctionRow {
  uint32_t process_id = 0;
  uint32_t name_id = 0;
  std::optional<int> registers_per_thread;
  std::optional<int64_t> local_bytes_per_thread;
  std::optional<int64_t> static_shared_bytes;
  std::optional<int64_t> const_bytes;
  std::optional<int> max_threads_per_block;
  std::optional<int> binary_version;
  std::optional<int> ptx_version;
};

struct FunctionArgRow {
  uint32_t process_id = 0;
  uint32_t name_id = 0;
  int32_t arg_index = 0;
  std::string role;
  std::string method;
  std::optional<int64_t> sampled_bytes;
  std::optional<uint32_t> correlation_id;
  int32_t offset_bytes = 0;
};

struct FunctionSassOpRow {
  uint32_t process_id = 0;
  uint32_t name_id = 0;
  std::string opcode;
  int64_t static_count = 0;
};

// Counters of one CUDA graph launch as a whole (schema 5): the range profiler counted everything
// its kernels did between the launch and their end as one range (application replay), so these
// are the sums over its kernels (kernel rows with this process and correlation id), not any one
// kernel's. counters.kernel_id is unused.
struct GraphLaunchCounters {
  uint32_t process_id = 0;
  uint32_t correlation_id = 0;  // of the graph launch call; its kernels share it
  // While collecting only (not stored): the driver call's id inside a runtime graph launch. The
  // writer keeps whichever of the two the launch's kernel rows carry.
  uint32_t alt_correlation_id = 0;
  KernelCounters counters;
  std::vector<std::pair<std::string, double>> raw;  // metric name, value (graph_launch_metric)
};

// One raw counter value, kept so every derived number can be traced to its metric name.
struct KernelMetricRecord {
  int64_t kernel_id = 0;
  std::string metric;  // e.g. "dram__bytes_read.sum"
  double value = 0;
};

// One raw counter value of a graph launch counted as one range (graph_launch_metric).
struct GraphLaunchMetricRecord {
  uint32_t process_id = 0;
  uint32_t correlation_id = 0;
  std::string metric;
  double value = 0;
};

// A roof of the roofline for one GPU model: a bandwidth (bytes/s) or a compute rate (FLOP/s).
struct CeilingRecord {
  std::string device_name;  // matches device.name
  std::string ceiling;      // "dram", "l2", "l1", "fp64", "fp32", "fp16", "bf16", "tensor_fp16", ...
  std::string unit;         // "bytes_per_s" or "flops_per_s"
  double value = 0;
  std::string source;  // "measured" or "datasheet"
  std::string method;  // how it was measured or computed, in words
};

}  // namespace fprof::core
