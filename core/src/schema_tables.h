// Every table of the .fprof schema, declared once: its doc, constraints and indexes, and per column
// the SQL name, type and doc, the ids it holds, the schema version that added it and where its
// value lives in the profile model (core/model.h). CREATE TABLE and docs/schema.md (schema.cpp),
// the writer's INSERTs, the reader's SELECTs and merge's copy are generated from these (columns.h).
// To add a column: declare it here (with Since{version, what older files read}), add the model's
// field, bump kSchemaVersion (schema.h) and regenerate docs/schema.md with
// `fprof schema --markdown > docs/schema.md`.
#pragma once

#include <string_view>

#include "columns.h"
#include "fprof/core/model.h"

namespace fprof::core::detail {

// memory_event.operation: 'alloc' or 'free'.
inline constexpr auto kAllocOrFree =
    mapped(&MemoryEventRecord::is_alloc, [](bool is_alloc) { return std::string_view(is_alloc ? "alloc" : "free"); },
           [](std::string_view operation) { return operation == "alloc"; });

inline constexpr auto kMetadataTable = table(
    {.name = "metadata",
     .doc = "Key/value facts about the run: schema_version, fprof_version, mode (trace), created_unix_ns, "
            "cupti_version, driver_version, dropped_records; from fprof run: exit_status, exit_code or exit_signal "
            "(how the program ended), run_plan (the plan fprof run --explain prints) and forwarded_signals (the "
            "signals fprof run passed on to the program); and whatever the collector needs to say once.",
     .replace = true},
    column("key", "TEXT PRIMARY KEY", "Name of the fact.", kByHand),
    column("value", "TEXT NOT NULL", "Its value, as text.", kByHand));

inline constexpr auto kStringTable = table(
    {.name = "string",
     .doc = "Interned strings (kernel names, NVTX paths): one row per distinct string."},
    column("id", "INTEGER PRIMARY KEY", "String id, referenced by *_id columns.", kByHand),
    column("value", "TEXT NOT NULL UNIQUE", "The string.", kByHand));

inline constexpr auto kProcessTable = table(
    {.name = "process",
     .doc = "One row per profiled process. A merged database holds one per rank."},
    column("id", "INTEGER PRIMARY KEY",
           "Process id within this database.",
           databaseAssigned(&ProcessInfo::id), Ref::process),
    column("pid", "INTEGER NOT NULL", "Operating-system process id.", &ProcessInfo::pid),
    column("host", "TEXT NOT NULL", "Host name.", &ProcessInfo::host),
    column("rank", "INTEGER",
           "Global rank (RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK, MV2_COMM_WORLD_RANK); NULL if none.",
           &ProcessInfo::rank),
    column("local_rank", "INTEGER", "Rank on its host (LOCAL_RANK, ...); NULL if none.", &ProcessInfo::local_rank),
    column("command_line", "TEXT NOT NULL",
           "The profiled command line, arguments space-separated.",
           &ProcessInfo::command_line),
    column("start_unix_ns", "INTEGER NOT NULL",
           "Wall-clock time the collector started, ns since 1970.",
           &ProcessInfo::start_unix_ns));

inline constexpr auto kDeviceTable = table(
    {.name = "device",
     .doc = "One row per GPU a process used, with the limits that occupancy and ceilings are computed from.",
     .constraints = "PRIMARY KEY (process_id, id)",
     .replace = true},
    column("process_id", "INTEGER NOT NULL", "Process that saw the device.", &DeviceInfo::process_id, Ref::process),
    column("id", "INTEGER NOT NULL", "CUDA device ordinal in that process.", &DeviceInfo::id),
    column("name", "TEXT NOT NULL", "Marketing name, e.g. 'NVIDIA H100 80GB HBM3'.", &DeviceInfo::name),
    column("uuid", "TEXT NOT NULL", "Device UUID ('' if unknown).", &DeviceInfo::uuid),
    column("compute_major", "INTEGER NOT NULL", "Compute capability, major.", &DeviceInfo::compute_major),
    column("compute_minor", "INTEGER NOT NULL", "Compute capability, minor.", &DeviceInfo::compute_minor),
    column("sm_count", "INTEGER NOT NULL", "Streaming multiprocessors.", &DeviceInfo::sm_count),
    column("max_threads_per_sm", "INTEGER NOT NULL", "Resident threads per SM.", &DeviceInfo::max_threads_per_sm),
    column("max_threads_per_block", "INTEGER NOT NULL", "Threads per block.", &DeviceInfo::max_threads_per_block),
    column("max_blocks_per_sm", "INTEGER NOT NULL", "Resident blocks per SM.", &DeviceInfo::max_blocks_per_sm),
    column("max_warps_per_sm", "INTEGER NOT NULL", "Resident warps per SM.", &DeviceInfo::max_warps_per_sm),
    column("regs_per_sm", "INTEGER NOT NULL", "32-bit registers per SM.", &DeviceInfo::regs_per_sm),
    column("regs_per_block", "INTEGER NOT NULL", "32-bit registers per block.", &DeviceInfo::regs_per_block),
    column("warp_size", "INTEGER NOT NULL", "Threads per warp.", &DeviceInfo::warp_size),
    column("shared_per_sm_bytes", "INTEGER NOT NULL", "Shared memory per SM.", &DeviceInfo::shared_per_sm_bytes),
    column("shared_per_block_bytes", "INTEGER NOT NULL",
           "Shared memory per block without opt-in.",
           &DeviceInfo::shared_per_block_bytes),
    column("shared_per_block_optin_bytes", "INTEGER NOT NULL",
           "Shared memory per block with opt-in.",
           &DeviceInfo::shared_per_block_optin_bytes),
    column("reserved_shared_per_block_bytes", "INTEGER NOT NULL",
           "Shared memory the system reserves per block.",
           &DeviceInfo::reserved_shared_per_block_bytes),
    column("l2_bytes", "INTEGER NOT NULL", "L2 cache size.", &DeviceInfo::l2_bytes),
    column("global_memory_bytes", "INTEGER NOT NULL", "Device memory size.", &DeviceInfo::global_memory_bytes),
    column("memory_bus_width_bits", "INTEGER NOT NULL", "Memory bus width.", &DeviceInfo::memory_bus_width_bits),
    column("memory_clock_khz", "INTEGER NOT NULL",
           "Peak memory clock (0 if not reported).",
           &DeviceInfo::memory_clock_khz),
    column("sm_clock_khz", "INTEGER NOT NULL", "Peak SM clock (0 if not reported).", &DeviceInfo::sm_clock_khz));

inline constexpr auto kNvtxRangeTable = table(
    {.name = "nvtx_range",
     .doc = "NVTX ranges (push/pop and start/end), all domains.",
     .indexes = {"CREATE INDEX nvtx_range_parent ON nvtx_range(parent_id)"},
     .replace = true},
    column("id", "INTEGER PRIMARY KEY", "Range id within this database.", &NvtxRangeRecord::key, Ref::nvtx_range),
    column("process_id", "INTEGER NOT NULL", "Process that opened it.", &NvtxRangeRecord::process_id, Ref::process),
    column("parent_id", "INTEGER",
           "Enclosing push/pop range on the same thread; NULL at the top.",
           &NvtxRangeRecord::parent_key, Ref::nvtx_range),
    column("domain", "TEXT NOT NULL", "NVTX domain ('' = default domain).", &NvtxRangeRecord::domain),
    column("message", "TEXT NOT NULL", "Range message.", &NvtxRangeRecord::message),
    column("payload", "INTEGER", "Integer payload, if one was given.", &NvtxRangeRecord::payload),
    column("thread_id", "INTEGER NOT NULL", "Host thread (push/pop ranges).", &NvtxRangeRecord::thread_id),
    column("depth", "INTEGER NOT NULL", "Nesting depth, 0 at the top.", &NvtxRangeRecord::depth),
    column("start_ns", "INTEGER NOT NULL",
           "Push/start time, CUPTI clock (same as kernels).",
           &NvtxRangeRecord::start_ns),
    column("end_ns", "INTEGER", "Pop/end time; NULL if still open at exit.", &NvtxRangeRecord::end_ns),
    column("push_pop", "INTEGER NOT NULL",
           "1 for push/pop ranges, 0 for start/end ranges.",
           &NvtxRangeRecord::push_pop));

inline constexpr auto kKernelTable = table(
    {.name = "kernel",
     .doc = "One row per kernel execution (trace mode).",
     .indexes = {"CREATE INDEX kernel_name ON kernel(name_id)",
                 "CREATE INDEX kernel_start ON kernel(start_ns)",
                 "CREATE INDEX kernel_corr ON kernel(process_id, correlation_id)"}},
    column("id", "INTEGER PRIMARY KEY",
           "Kernel id within this database.",
           writerAssigned(&KernelRow::id), Ref::kernel),
    column("process_id", "INTEGER NOT NULL", "Process that launched it.", &KernelLaunch::process_id, Ref::process),
    column("device_id", "INTEGER NOT NULL", "CUDA device ordinal.", &KernelLaunch::device_id),
    column("context_id", "INTEGER NOT NULL", "CUDA context id.", &KernelLaunch::context_id),
    column("stream_id", "INTEGER NOT NULL", "CUDA stream id.", &KernelLaunch::stream_id),
    column("correlation_id", "INTEGER NOT NULL",
           "CUPTI correlation id of the launch (joins kernel_arg).",
           &KernelLaunch::correlation_id),
    column("thread_id", "INTEGER NOT NULL", "Launching host thread (0 if unknown).", &KernelLaunch::thread_id),
    column("start_ns", "INTEGER NOT NULL", "GPU start, CUPTI clock in ns.", &KernelLaunch::start_ns),
    column("end_ns", "INTEGER NOT NULL", "GPU end, CUPTI clock in ns.", &KernelLaunch::end_ns),
    column("duration_ns", "INTEGER NOT NULL",
           "end_ns - start_ns.",
           derived([](const KernelRecord& k) { return k.end_ns - k.start_ns; })),
    column("name_id", "INTEGER NOT NULL REFERENCES string(id)",
           "Mangled kernel name.",
           interned(&KernelRecord::name, &KernelRow::name_id, "name"), Ref::string),
    column("demangled_id", "INTEGER NOT NULL REFERENCES string(id)",
           "Demangled kernel name.",
           internedOr(&KernelRecord::demangled_name, &KernelRecord::name, &KernelRow::demangled_id, "name"),
           Ref::string),
    column("grid_x", "INTEGER NOT NULL", "Grid size in blocks, x.", &KernelLaunch::grid_x),
    column("grid_y", "INTEGER NOT NULL", "Grid size, y.", &KernelLaunch::grid_y),
    column("grid_z", "INTEGER NOT NULL", "Grid size, z.", &KernelLaunch::grid_z),
    column("block_x", "INTEGER NOT NULL", "Block size in threads, x.", &KernelLaunch::block_x),
    column("block_y", "INTEGER NOT NULL", "Block size, y.", &KernelLaunch::block_y),
    column("block_z", "INTEGER NOT NULL", "Block size, z.", &KernelLaunch::block_z),
    column("cluster_x", "INTEGER NOT NULL",
           "Thread-block cluster size, x (0 = no cluster).",
           &KernelLaunch::cluster_x),
    column("cluster_y", "INTEGER NOT NULL", "Cluster size, y.", &KernelLaunch::cluster_y),
    column("cluster_z", "INTEGER NOT NULL", "Cluster size, z.", &KernelLaunch::cluster_z),
    column("registers_per_thread", "INTEGER NOT NULL", "Registers per thread.", &KernelLaunch::registers_per_thread),
    column("static_shared_bytes", "INTEGER NOT NULL",
           "Static shared memory per block.",
           &KernelLaunch::static_shared_bytes),
    column("dynamic_shared_bytes", "INTEGER NOT NULL",
           "Dynamic shared memory per block.",
           &KernelLaunch::dynamic_shared_bytes),
    column("local_bytes_per_thread", "INTEGER NOT NULL",
           "Local memory per thread (stack frame, spills).",
           &KernelLaunch::local_bytes_per_thread),
    column("local_bytes_total", "INTEGER NOT NULL",
           "Local memory reserved for the launch.",
           &KernelLaunch::local_bytes_total),
    column("shared_carveout_bytes", "INTEGER NOT NULL",
           "Shared-memory carveout the driver configured (0 if unknown).",
           &KernelLaunch::shared_carveout_bytes),
    column("theoretical_occupancy", "REAL",
           "Resident warps / max warps per SM, 0..1; NULL if unknown.",
           &KernelLaunch::theoretical_occupancy),
    column("theoretical_blocks_per_sm", "INTEGER",
           "Resident blocks per SM; NULL if unknown.",
           &KernelLaunch::theoretical_blocks_per_sm),
    column("occupancy_limiter", "TEXT NOT NULL",
           "What limits occupancy: warps, registers, shared, blocks ('' if unknown).",
           textAsId(&KernelRecord::occupancy_limiter, &KernelRow::occupancy_limiter_id)),
    column("graph_id", "INTEGER NOT NULL", "CUDA graph id (0 = not launched from a graph).", &KernelLaunch::graph_id),
    column("graph_node_id", "INTEGER NOT NULL", "CUDA graph node id (0 = none).", &KernelLaunch::graph_node_id),
    column("launch_api", "TEXT NOT NULL",
           "Outermost launch API, e.g. cudaLaunchKernel ('' for graph nodes).",
           textAsId(&KernelRecord::launch_api, &KernelRow::launch_api_id)),
    column("nvtx_range_id", "INTEGER REFERENCES nvtx_range(id)",
           "Innermost NVTX range open at launch; NULL if none.",
           &KernelLaunch::nvtx_range_key, Ref::nvtx_range),
    column("nvtx_path_id", "INTEGER REFERENCES string(id)",
           "Full NVTX path at launch, 'domain::a/b'; NULL if none.",
           internedOrNull(&KernelRecord::nvtx_path, &KernelRow::nvtx_path_id, "NVTX path"), Ref::string),
    column("programmatic_launch", "INTEGER NOT NULL DEFAULT 0",
           "1 if launched with programmatic stream serialization (programmatic dependent launch): its blocks may "
           "start while the stream's previous kernel still runs and wait for it in griddepcontrol.wait, so "
           "duration_ns includes that wait. fprof's analysis counts such a kernel from the later of start_ns and its "
           "predecessor's end_ns (version 6; 0 in older files).",
           &KernelLaunch::programmatic_launch, Since{6, "0"}));

inline constexpr auto kKernelArgTable = table(
    {.name = "kernel_arg",
     .doc = "Launch arguments of kernels that may be device pointers, for producer->consumer data flow: every 8-byte "
            "parameter, and the 8-aligned words (at least 4 GiB in value) inside larger parameters, where PyTorch "
            "and others pass pointers in arrays and structs.",
     .indexes = {"CREATE INDEX kernel_arg_corr ON kernel_arg(process_id, correlation_id)"}},
    column("process_id", "INTEGER NOT NULL",
           "Process that launched the kernel.",
           &KernelArgRecord::process_id, Ref::process),
    column("correlation_id", "INTEGER NOT NULL",
           "Launch correlation id (joins kernel).",
           &KernelArgRecord::correlation_id),
    column("arg_index", "INTEGER NOT NULL", "Parameter index.", &KernelArgRecord::index),
    column("offset_bytes", "INTEGER NOT NULL",
           "Offset of the value in the parameter buffer.",
           &KernelArgRecord::offset_bytes),
    column("size_bytes", "INTEGER NOT NULL",
           "Size of the parameter it is in: 8 for an 8-byte parameter, more for a word inside a larger one.",
           &KernelArgRecord::size_bytes),
    column("value", "INTEGER NOT NULL",
           "Parameter value (a device address if it is a pointer), as signed 64-bit.",
           &KernelArgRecord::value));

inline constexpr auto kMemcpyTable = table(
    {.name = "memcpy",
     .doc = "Memory copies."},
    column("id", "INTEGER PRIMARY KEY", "Copy id.", kRowNumber),
    column("process_id", "INTEGER NOT NULL", "Process.", &MemcpyRecord::process_id, Ref::process),
    column("device_id", "INTEGER NOT NULL", "Device.", &MemcpyRecord::device_id),
    column("context_id", "INTEGER NOT NULL", "Context.", &MemcpyRecord::context_id),
    column("stream_id", "INTEGER NOT NULL", "Stream.", &MemcpyRecord::stream_id),
    column("correlation_id", "INTEGER NOT NULL", "Correlation id of the API call.", &MemcpyRecord::correlation_id),
    column("start_ns", "INTEGER NOT NULL", "Start, CUPTI clock.", &MemcpyRecord::start_ns),
    column("end_ns", "INTEGER NOT NULL", "End, CUPTI clock.", &MemcpyRecord::end_ns),
    column("bytes", "INTEGER NOT NULL", "Bytes copied.", &MemcpyRecord::bytes),
    column("copy_kind", "TEXT NOT NULL", "HtoD, DtoH, DtoD, HtoH, PtoP, ...", &MemcpyRecord::copy_kind),
    column("src_kind", "TEXT NOT NULL", "Source memory kind.", &MemcpyRecord::src_kind),
    column("dst_kind", "TEXT NOT NULL", "Destination memory kind.", &MemcpyRecord::dst_kind),
    column("graph_id", "INTEGER NOT NULL", "CUDA graph id (0 = none).", &MemcpyRecord::graph_id));

inline constexpr auto kMemcpyAddressTable = table(
    {.name = "memcpy_address",
     .doc = "Source and destination addresses of device-to-device copies, from the driver API call that issued them "
            "(the activity record has none): data flow passes a copied value on instead of losing every version on "
            "the device. Schema 3.",
     .constraints = "PRIMARY KEY (process_id, correlation_id)",
     .since = 3,
     .replace = true},
    column("process_id", "INTEGER NOT NULL", "Process.", &MemcpyAddressRecord::process_id, Ref::process),
    column("correlation_id", "INTEGER NOT NULL",
           "Correlation id of the API call (as memcpy.correlation_id).",
           &MemcpyAddressRecord::correlation_id),
    column("src_address", "INTEGER NOT NULL",
           "Source device address, as signed 64-bit.",
           &MemcpyAddressRecord::src_address),
    column("dst_address", "INTEGER NOT NULL",
           "Destination device address, as signed 64-bit.",
           &MemcpyAddressRecord::dst_address),
    column("bytes", "INTEGER NOT NULL", "Bytes the call asked to copy.", &MemcpyAddressRecord::bytes));

inline constexpr auto kMemsetTable = table(
    {.name = "memset",
     .doc = "Memory sets."},
    column("id", "INTEGER PRIMARY KEY", "Memset id.", kRowNumber),
    column("process_id", "INTEGER NOT NULL", "Process.", &MemsetRecord::process_id, Ref::process),
    column("device_id", "INTEGER NOT NULL", "Device.", &MemsetRecord::device_id),
    column("context_id", "INTEGER NOT NULL", "Context.", &MemsetRecord::context_id),
    column("stream_id", "INTEGER NOT NULL", "Stream.", &MemsetRecord::stream_id),
    column("correlation_id", "INTEGER NOT NULL", "Correlation id of the API call.", &MemsetRecord::correlation_id),
    column("start_ns", "INTEGER NOT NULL", "Start, CUPTI clock.", &MemsetRecord::start_ns),
    column("end_ns", "INTEGER NOT NULL", "End, CUPTI clock.", &MemsetRecord::end_ns),
    column("bytes", "INTEGER NOT NULL", "Bytes set.", &MemsetRecord::bytes),
    column("value", "INTEGER NOT NULL", "Value written.", &MemsetRecord::value),
    column("memory_kind", "TEXT NOT NULL", "Memory kind.", &MemsetRecord::memory_kind),
    column("graph_id", "INTEGER NOT NULL", "CUDA graph id (0 = none).", &MemsetRecord::graph_id));

inline constexpr auto kMemoryEventTable = table(
    {.name = "memory_event",
     .doc = "Device-memory allocations and frees, in time order.",
     .indexes = {"CREATE INDEX memory_event_address ON memory_event(address)"}},
    column("id", "INTEGER PRIMARY KEY", "Event id.", kRowNumber),
    column("process_id", "INTEGER NOT NULL", "Process.", &MemoryEventRecord::process_id, Ref::process),
    column("device_id", "INTEGER NOT NULL", "Device.", &MemoryEventRecord::device_id),
    column("context_id", "INTEGER NOT NULL", "Context.", &MemoryEventRecord::context_id),
    column("stream_id", "INTEGER NOT NULL",
           "Stream (stream-ordered allocators), else 0.",
           &MemoryEventRecord::stream_id),
    column("correlation_id", "INTEGER NOT NULL",
           "Correlation id of the API call.",
           &MemoryEventRecord::correlation_id),
    column("timestamp_ns", "INTEGER NOT NULL", "When, CUPTI clock.", &MemoryEventRecord::timestamp_ns),
    column("operation", "TEXT NOT NULL", "'alloc' or 'free'.", kAllocOrFree),
    column("address", "INTEGER NOT NULL", "Device address, as signed 64-bit.", &MemoryEventRecord::address),
    column("bytes", "INTEGER NOT NULL", "Size of the allocation.", &MemoryEventRecord::bytes),
    column("memory_kind", "TEXT NOT NULL", "device, managed, pinned, ...", &MemoryEventRecord::memory_kind));

inline constexpr auto kKernelCounterTable = table(
    {.name = "kernel_counter",
     .doc = "Hardware-counter results per kernel (metrics mode). NULL = not collected, never 0. FLOPs count an FMA "
            "as 2; tensor-core FLOPs are calibrated so a GEMM of M*N*K reads 2*M*N*K.",
     .replace = true},
    column("kernel_id", "INTEGER PRIMARY KEY REFERENCES kernel(id)",
           "The kernel.",
           &KernelCounters::kernel_id, Ref::kernel),
    column("dram_read_bytes", "REAL",
           "Bytes read from device memory (dram__bytes_read.sum).",
           &KernelCounters::dram_read_bytes),
    column("dram_write_bytes", "REAL",
           "Bytes written to device memory (dram__bytes_write.sum).",
           &KernelCounters::dram_write_bytes),
    column("l2_bytes", "REAL",
           "Bytes the SMs read and wrote at the L2: 32 x lts__t_sectors_srcunit_tex.sum where collected (the sets "
           "memory, roofline, full), else lts__t_bytes.sum (custom lists, recordings before 2026-11-28), which also "
           "counts the traffic between the L2's partitions (GH100); both raw counters are in kernel_metric.",
           &KernelCounters::l2_bytes),
    column("l1_bytes", "REAL", "Bytes through L1/TEX (l1tex__t_bytes.sum).", &KernelCounters::l1_bytes),
    column("flops_fp64", "REAL", "FP64 FLOPs (dadd + dmul + 2 dfma).", &KernelCounters::flops_fp64),
    column("flops_fp32", "REAL", "FP32 FLOPs (fadd + fmul + 2 ffma).", &KernelCounters::flops_fp32),
    column("flops_fp16", "REAL",
           "FP16 FLOPs on the non-tensor pipe (hadd + hmul + 2 hfma).",
           &KernelCounters::flops_fp16),
    column("flops_bf16", "REAL", "BF16 FLOPs on the non-tensor pipe.", &KernelCounters::flops_bf16),
    column("flops_tensor_fp16", "REAL", "Tensor-core FLOPs, fp16 inputs.", &KernelCounters::flops_tensor_fp16),
    column("flops_tensor_bf16", "REAL", "Tensor-core FLOPs, bf16 inputs.", &KernelCounters::flops_tensor_bf16),
    column("flops_tensor_tf32", "REAL", "Tensor-core FLOPs, tf32 inputs.", &KernelCounters::flops_tensor_tf32),
    column("flops_tensor_fp8", "REAL", "Tensor-core FLOPs, fp8 inputs.", &KernelCounters::flops_tensor_fp8),
    column("flops_tensor_fp64", "REAL", "Tensor-core FLOPs, fp64.", &KernelCounters::flops_tensor_fp64),
    column("ops_tensor_int8", "REAL", "Tensor-core integer ops, int8 inputs.", &KernelCounters::ops_tensor_int8),
    column("achieved_occupancy", "REAL",
           "Achieved active warps / max warps, 0..1.",
           &KernelCounters::achieved_occupancy),
    column("local_load_bytes", "REAL", "Local-memory (spill/stack) load bytes.", &KernelCounters::local_load_bytes),
    column("local_store_bytes", "REAL",
           "Local-memory (spill/stack) store bytes.",
           &KernelCounters::local_store_bytes),
    column("instructions", "REAL", "Warp-level instructions executed.", &KernelCounters::instructions),
    column("gpu_time_ns", "REAL",
           "GPU time from the counter (gpu__time_duration.sum).",
           &KernelCounters::gpu_time_ns),
    column("source", "TEXT NOT NULL DEFAULT 'profiled'",
           "How the values were obtained: 'profiled' (this launch was replayed under the range profiler) or "
           "'same_signature' (copied from source_kernel_id, an earlier launch of the same function with the same "
           "grid, block, shared memory and non-pointer argument bytes; for a kernel of a CUDA graph, such a launch "
           "outside the graph, before or after it, compared without cluster shape and 1-byte arguments as "
           "docs/metrics.md says).",
           &KernelCounters::source, Since{2, "'profiled'"}),
    column("source_kernel_id", "INTEGER",
           "For same_signature: the profiled kernel whose values these are.",
           &KernelCounters::source_kernel_id, Ref::kernel, Since{2}),
    column("signature_varies", "INTEGER",
           "1: profiled launches of this signature gave different counts (data-dependent); 0: they agreed; NULL: one "
           "sample.",
           &KernelCounters::signature_varies, Since{2}),
    column("half_flops_method", "TEXT",
           "How flops_fp16/flops_bf16 were counted per lane (packed HFMA2 = 2 lanes, lane-broadcast = 1, conversions "
           "= 0), from the function's SASS, with HFMA2 split by pipe (FMA pipe, HFMA2.MMA) where "
           "sm__thread_inst_executed_pipe_fma_type_fp16_pred_on.sum was collected; or 'per instruction: ...' where "
           "each HADD2/HMUL2/HFMA2 was counted on its own (SASS patching in application replay's second run), exact "
           "whatever forms the function mixes; or why they are unknown, with bounds; NULL if the kernel ran no half "
           "instructions.",
           textOrNull(&KernelCounters::half_flops_method), Since{2}),
    column("tensor_flops_method", "TEXT",
           "How flops_tensor_* were counted where the metric set had no sm__ops_path_tensor_* counters: the tensor "
           "pipe's active cycles (sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active) times the ops a cycle "
           "of the function's MMA instructions (from its SASS; rates calibrated on GH100), and DMMA instructions "
           "times their shape's FLOPs; or why they are unknown; NULL where ops_path counters gave them directly or "
           "the kernel ran no tensor instructions.",
           textOrNull(&KernelCounters::tensor_flops_method), Since{4}));

inline constexpr auto kKernelCounterMissingTable = table(
    {.name = "kernel_counter_missing",
     .doc = "A kernel of a metrics-mode run that has no counters, and why: every kernel of such a run has a "
            "kernel_counter row or a row here.",
     .since = 2,
     .replace = true},
    column("kernel_id", "INTEGER PRIMARY KEY REFERENCES kernel(id)",
           "The kernel.",
           &KernelCounterMissing::kernel_id, Ref::kernel),
    column("reason", "TEXT NOT NULL",
           "Why, e.g. 'cooperative launch: not replayed', 'not selected (--kernel-regex)'.",
           &KernelCounterMissing::reason));

inline constexpr auto kFunctionTable = table(
    {.name = "function",
     .doc = "Per process and kernel function: facts the driver reports once for the function (not per launch).",
     .constraints = "PRIMARY KEY (process_id, name_id)",
     .since = 2,
     .replace = true},
    column("process_id", "INTEGER NOT NULL", "Process.", both(&FunctionRecord::process_id, &FunctionRow::process_id),
           Ref::process),
    column("name_id", "INTEGER NOT NULL REFERENCES string(id)",
           "Mangled function name (as kernel.name_id).",
           interned(&FunctionRecord::name, &FunctionRow::name_id, "name"), Ref::string),
    column("registers_per_thread", "INTEGER",
           "CU_FUNC_ATTRIBUTE_NUM_REGS: registers per thread as `ptxas -v` reports them (kernel.registers_per_thread "
           "is CUPTI's allocated count, rounded up); NULL if unknown.",
           both(&FunctionRecord::registers_per_thread, &FunctionRow::registers_per_thread)),
    column("local_bytes_per_thread", "INTEGER",
           "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES (stack frame + spills).",
           both(&FunctionRecord::local_bytes_per_thread, &FunctionRow::local_bytes_per_thread)),
    column("static_shared_bytes", "INTEGER",
           "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES.",
           both(&FunctionRecord::static_shared_bytes, &FunctionRow::static_shared_bytes)),
    column("const_bytes", "INTEGER",
           "CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES.",
           both(&FunctionRecord::const_bytes, &FunctionRow::const_bytes)),
    column("max_threads_per_block", "INTEGER",
           "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK.",
           both(&FunctionRecord::max_threads_per_block, &FunctionRow::max_threads_per_block)),
    column("binary_version", "INTEGER",
           "SASS architecture the function was built for (e.g. 90).",
           both(&FunctionRecord::binary_version, &FunctionRow::binary_version)),
    column("ptx_version", "INTEGER",
           "PTX virtual architecture (e.g. 90).",
           both(&FunctionRecord::ptx_version, &FunctionRow::ptx_version)));

inline constexpr auto kFunctionArgTable = table(
    {.name = "function_arg",
     .doc = "What each pointer argument of a kernel function does, measured by comparing a sample of the memory "
            "behind it before and after one launch.",
     .constraints = "PRIMARY KEY (process_id, name_id, arg_index, offset_bytes)",
     .since = 2,
     .replace = true},
    column("process_id", "INTEGER NOT NULL",
           "Process.",
           both(&FunctionArgRecord::process_id, &FunctionArgRow::process_id), Ref::process),
    column("name_id", "INTEGER NOT NULL REFERENCES string(id)",
           "Mangled function name.",
           interned(&FunctionArgRecord::name, &FunctionArgRow::name_id, "name"), Ref::string),
    column("arg_index", "INTEGER NOT NULL",
           "Parameter index (as kernel_arg.arg_index).",
           both(&FunctionArgRecord::arg_index, &FunctionArgRow::arg_index)),
    column("role", "TEXT NOT NULL",
           "'write' (sampled bytes changed during the launch), 'read' (a device address whose sampled bytes did not "
           "change: read or unused) or 'not_pointer' (no device address).",
           both(&FunctionArgRecord::role, &FunctionArgRow::role)),
    column("method", "TEXT NOT NULL",
           "How the role was obtained, in words.",
           both(&FunctionArgRecord::method, &FunctionArgRow::method)),
    column("sampled_bytes", "INTEGER",
           "Bytes compared.",
           both(&FunctionArgRecord::sampled_bytes, &FunctionArgRow::sampled_bytes)),
    column("correlation_id", "INTEGER",
           "The launch it was measured on; NULL if unknown.",
           both(&FunctionArgRecord::correlation_id, &FunctionArgRow::correlation_id)),
    column("offset_bytes", "INTEGER NOT NULL DEFAULT 0",
           "Offset of the pointer in the parameter buffer (as kernel_arg.offset_bytes): a parameter may hold several.",
           both(&FunctionArgRecord::offset_bytes, &FunctionArgRow::offset_bytes)));

inline constexpr auto kFunctionSassOpTable = table(
    {.name = "function_sass_op",
     .doc = "Static SASS instruction counts per function for the FLOP-relevant half-precision opcodes, by lane use: "
            "what half_flops_method is derived from.",
     .constraints = "PRIMARY KEY (process_id, name_id, opcode)",
     .since = 2,
     .replace = true},
    column("process_id", "INTEGER NOT NULL",
           "Process.",
           both(&FunctionSassOpRecord::process_id, &FunctionSassOpRow::process_id), Ref::process),
    column("name_id", "INTEGER NOT NULL REFERENCES string(id)",
           "Mangled function name.",
           interned(&FunctionSassOpRecord::name, &FunctionSassOpRow::name_id, "name"), Ref::string),
    column("opcode", "TEXT NOT NULL",
           "Opcode class: opcode, .MMA where it runs on the MMA pipe, precision (f16, bf16) and form (packed: 2 "
           "lanes, scalar: lane-broadcast operands, 1 lane, zero: immediate move or conversion, other: compare or "
           "min/max), e.g. HFMA2.MMA.f16.packed, HFMA2.f16.scalar, HADD2.f16.zero, HMNMX2.bf16.other; and each "
           "tensor-core instruction as nvdisasm prints it, prefixed mma: (e.g. mma:HGMMA.64x128x16.F32.BF16), which "
           "tensor_flops_method is derived from.",
           both(&FunctionSassOpRecord::opcode, &FunctionSassOpRow::opcode)),
    column("static_count", "INTEGER NOT NULL",
           "Instructions of that class in the function's SASS.",
           both(&FunctionSassOpRecord::static_count, &FunctionSassOpRow::static_count)));

inline constexpr auto kKernelMetricTable = table(
    {.name = "kernel_metric",
     .doc = "Raw counter values per kernel, by metric name: where every kernel_counter number comes from.",
     .constraints = "PRIMARY KEY (kernel_id, metric_id)",
     .replace = true},
    column("kernel_id", "INTEGER NOT NULL REFERENCES kernel(id)",
           "The kernel.",
           &KernelMetricRecord::kernel_id, Ref::kernel),
    column("metric_id", "INTEGER NOT NULL REFERENCES string(id)",
           "Metric name, e.g. dram__bytes_read.sum; names starting fprof__ are fprof's own sums over per-instruction "
           "counts (fprof__sass_per_pc_flops_fp16.sum, ..._bf16.sum: half FLOPs per lane, SASS patching).",
           interned(&KernelMetricRecord::metric, &KernelMetricRecord::metric, "metric"), Ref::string),
    column("value", "REAL NOT NULL", "Value as the profiler evaluated it.", &KernelMetricRecord::value));

inline constexpr auto kGraphLaunchCounterTable = table(
    {.name = "graph_launch_counter",
     .doc = "Counters of a CUDA graph launch as a whole (metrics mode, application replay): the range profiler "
            "counted everything the launch's kernels did as one range, so each value is the sum over its kernels "
            "(the kernel rows with this process_id and correlation_id), the occupancy an average and gpu_time_ns the "
            "range's duration. The kernels themselves keep a kernel_counter_missing reason (or values copied from an "
            "identical launch outside the graph). NULL = not collected (SASS-instrumented counters are not).",
     .constraints = "PRIMARY KEY (process_id, correlation_id)",
     .since = 5,
     .replace = true},
    column("process_id", "INTEGER NOT NULL REFERENCES process(id)",
           "The process.",
           &GraphLaunchCounters::process_id, Ref::process),
    column("correlation_id", "INTEGER NOT NULL",
           "The graph launch call's correlation id, shared by its kernels.",
           &GraphLaunchCounters::correlation_id),
    column("dram_read_bytes", "REAL",
           "As kernel_counter, summed over the launch's kernels.",
           nested(&GraphLaunchCounters::counters, &KernelCounters::dram_read_bytes)),
    column("dram_write_bytes", "REAL",
           "As kernel_counter.",
           nested(&GraphLaunchCounters::counters, &KernelCounters::dram_write_bytes)),
    column("l2_bytes", "REAL",
           "As kernel_counter.",
           nested(&GraphLaunchCounters::counters, &KernelCounters::l2_bytes)),
    column("l1_bytes", "REAL",
           "As kernel_counter.",
           nested(&GraphLaunchCounters::counters, &KernelCounters::l1_bytes)),
    column("flops_fp64", "REAL",
           "As kernel_counter.",
           nested(&GraphLaunchCounters::counters, &KernelCounters::flops_fp64)),
    column("flops_fp32", "REAL",
           "As kernel_counter.",
           nested(&GraphLaunchCounters::counters, &KernelCounters::flops_fp32)),
    column("flops_fp16", "REAL",
           "As kernel_counter.",
           nested(&GraphLaunchCounters::counters, &KernelCounters::flops_fp16)),
    column("flops_bf16", "REAL",
           "As kernel_counter.",
           nested(&GraphLaunchCounters::counters, &KernelCounters::flops_bf16)),
    column("flops_tensor_fp16", "REAL",
           "As kernel_counter.",
           nested(&GraphLaunchCounters::counters, &KernelCounters::flops_tensor_fp16)),
    column("flops_tensor_bf16", "REAL",
           "As kernel_counter.",
           nested(&GraphLaunchCounters::counters, &KernelCounters::flops_tensor_bf16)),
    column("flops_tensor_tf32", "REAL",
           "As kernel_counter.",
           nested(&GraphLaunchCounters::counters, &KernelCounters::flops_tensor_tf32)),
    column("flops_tensor_fp8", "REAL",
           "As kernel_counter.",
           nested(&GraphLaunchCounters::counters, &KernelCounters::flops_tensor_fp8)),
    column("flops_tensor_fp64", "REAL",
           "As kernel_counter.",
           nested(&GraphLaunchCounters::counters, &KernelCounters::flops_tensor_fp64)),
    column("ops_tensor_int8", "REAL",
           "As kernel_counter.",
           nested(&GraphLaunchCounters::counters, &KernelCounters::ops_tensor_int8)),
    column("achieved_occupancy", "REAL",
           "Average over the range, 0..1.",
           nested(&GraphLaunchCounters::counters, &KernelCounters::achieved_occupancy)),
    column("local_load_bytes", "REAL",
           "As kernel_counter.",
           nested(&GraphLaunchCounters::counters, &KernelCounters::local_load_bytes)),
    column("local_store_bytes", "REAL",
           "As kernel_counter.",
           nested(&GraphLaunchCounters::counters, &KernelCounters::local_store_bytes)),
    column("instructions", "REAL",
           "As kernel_counter.",
           nested(&GraphLaunchCounters::counters, &KernelCounters::instructions)),
    column("gpu_time_ns", "REAL",
           "The range's duration (gpu__time_duration.sum).",
           nested(&GraphLaunchCounters::counters, &KernelCounters::gpu_time_ns)));

inline constexpr auto kGraphLaunchMetricTable = table(
    {.name = "graph_launch_metric",
     .doc = "Raw counter values per counted graph launch, by metric name: where every graph_launch_counter number "
            "comes from.",
     .constraints = "PRIMARY KEY (process_id, correlation_id, metric_id)",
     .since = 5,
     .replace = true},
    column("process_id", "INTEGER NOT NULL REFERENCES process(id)",
           "The process.",
           &GraphLaunchMetricRecord::process_id, Ref::process),
    column("correlation_id", "INTEGER NOT NULL",
           "The graph launch call's correlation id.",
           &GraphLaunchMetricRecord::correlation_id),
    column("metric_id", "INTEGER NOT NULL REFERENCES string(id)",
           "Metric name, e.g. dram__bytes_read.sum.",
           interned(&GraphLaunchMetricRecord::metric, &GraphLaunchMetricRecord::metric, "metric"), Ref::string),
    column("value", "REAL NOT NULL", "Value as the profiler evaluated it.", &GraphLaunchMetricRecord::value));

inline constexpr auto kCeilingTable = table(
    {.name = "ceiling",
     .doc = "Roofs of the roofline per GPU model: bandwidths (bytes/s) and compute rates (FLOP/s), measured by "
            "`fprof ceilings` or computed from the datasheet/device attributes.",
     .constraints = "PRIMARY KEY (device_name, ceiling, source)",
     .replace = true},
    column("device_name", "TEXT NOT NULL", "GPU model, as device.name.", &CeilingRecord::device_name),
    column("ceiling", "TEXT NOT NULL",
           "dram, l2, l1, fp64, fp32, fp16, bf16, tensor_fp16, tensor_bf16, ...",
           &CeilingRecord::ceiling),
    column("unit", "TEXT NOT NULL", "bytes_per_s or flops_per_s.", &CeilingRecord::unit),
    column("value", "REAL NOT NULL", "The rate.", &CeilingRecord::value),
    column("source", "TEXT NOT NULL", "measured or datasheet.", &CeilingRecord::source),
    column("method", "TEXT NOT NULL", "How it was measured or computed.", &CeilingRecord::method));

inline constexpr auto kCollectorEventTable = table(
    {.name = "collector_event",
     .doc = "Warnings and notes from the collector (degraded mode, dropped records, ...)."},
    column("id", "INTEGER PRIMARY KEY", "Event id.", kRowNumber),
    column("process_id", "INTEGER NOT NULL", "Process.", &CollectorEventRecord::process_id, Ref::process),
    column("timestamp_ns", "INTEGER NOT NULL",
           "When, CUPTI clock (0 if before CUPTI started).",
           &CollectorEventRecord::timestamp_ns),
    column("severity", "TEXT NOT NULL", "info, warning or error.", &CollectorEventRecord::severity),
    column("message", "TEXT NOT NULL", "What happened and what to do.", &CollectorEventRecord::message));
// The views: SQL over the tables for those who query a file by hand.
struct ViewInfo {
  const char* name;
  const char* doc;
  const char* select_sql;
};

inline constexpr ViewInfo kViews[] = {
    {"kernel_view",
     "Kernels with names and NVTX path resolved: the table to query by hand.",
     "SELECT k.id, k.process_id, k.device_id, k.stream_id, k.correlation_id, k.start_ns, k.end_ns, "
     "k.duration_ns, n.value AS name, d.value AS demangled_name, k.grid_x, k.grid_y, k.grid_z, "
     "k.block_x, k.block_y, k.block_z, k.registers_per_thread, k.static_shared_bytes, "
     "k.dynamic_shared_bytes, k.local_bytes_per_thread, k.theoretical_occupancy, k.occupancy_limiter, "
     "k.graph_id, k.launch_api, k.nvtx_range_id, p.value AS nvtx_path "
     "FROM kernel k JOIN string n ON n.id = k.name_id JOIN string d ON d.id = k.demangled_id "
     "LEFT JOIN string p ON p.id = k.nvtx_path_id"},
    {"kernel_summary",
     "Per demangled kernel name: calls, total, mean, min and max duration, share of GPU kernel time.",
     "SELECT d.value AS demangled_name, COUNT(*) AS calls, SUM(k.duration_ns) AS total_ns, "
     "AVG(k.duration_ns) AS mean_ns, MIN(k.duration_ns) AS min_ns, MAX(k.duration_ns) AS max_ns, "
     "100.0 * SUM(k.duration_ns) / (SELECT SUM(duration_ns) FROM kernel) AS percent_of_gpu_time "
     "FROM kernel k JOIN string d ON d.id = k.demangled_id GROUP BY k.demangled_id "
     "ORDER BY total_ns DESC"},
    {"nvtx_summary",
     "Per NVTX domain and message: count and total wall time of the ranges.",
     "SELECT domain, message, COUNT(*) AS ranges, SUM(end_ns - start_ns) AS total_ns "
     "FROM nvtx_range WHERE end_ns IS NOT NULL GROUP BY domain, message ORDER BY total_ns DESC"}
};

// Calls f(table) for every table, in the order CREATE TABLE and docs/schema.md list them.
template <class F>
constexpr void forEachTable(F&& f) {
  f(kMetadataTable);
  f(kStringTable);
  f(kProcessTable);
  f(kDeviceTable);
  f(kNvtxRangeTable);
  f(kKernelTable);
  f(kKernelArgTable);
  f(kMemcpyTable);
  f(kMemcpyAddressTable);
  f(kMemsetTable);
  f(kMemoryEventTable);
  f(kKernelCounterTable);
  f(kKernelCounterMissingTable);
  f(kFunctionTable);
  f(kFunctionArgTable);
  f(kFunctionSassOpTable);
  f(kKernelMetricTable);
  f(kGraphLaunchCounterTable);
  f(kGraphLaunchMetricTable);
  f(kCeilingTable);
  f(kCollectorEventTable);
}

// Merge moves ids by what a column's declaration says it holds: a column named like an id column
// must say so.
constexpr bool idColumnsSayWhoseIds() {
  bool ok = true;
  forEachTable([&](const auto& t) {
    t.forEach([&](const auto& c) {
      const std::string_view name = c.info.name;
      if (name == "process_id" && c.info.ref != Ref::process) ok = false;
      if (name.ends_with("kernel_id") && c.info.ref != Ref::kernel) ok = false;
      if ((name == "nvtx_range_id" || name == "parent_id") && c.info.ref != Ref::nvtx_range) ok = false;
      if ((name.ends_with("name_id") || name.ends_with("metric_id") || name.ends_with("path_id") ||
           name == "demangled_id") &&
          c.info.ref != Ref::string) {
        ok = false;
      }
    });
  });
  return ok;
}
static_assert(idColumnsSayWhoseIds(), "a process_id, *kernel_id, NVTX range or string id column without its Ref");

}  // namespace fprof::core::detail
