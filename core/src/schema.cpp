// The schema as data (see schema.h). Change it here, bump kSchemaVersion, add a migration in
// store_reader.cpp, and regenerate docs/schema.md with `fprof schema --markdown > docs/schema.md`.
#include "fprof/core/schema.h"

#include <sstream>

namespace fprof::core {
namespace {

std::vector<TableDef> makeTables() {
  return {
      {"metadata",
       "Key/value facts about the run: schema_version, fprof_version, mode (trace), created_unix_ns, "
       "cupti_version, driver_version, dropped_records, and whatever the collector needs to say once.",
       {{"key", "TEXT PRIMARY KEY", "Name of the fact."},
        {"value", "TEXT NOT NULL", "Its value, as text."}},
       {},
       ""},
      {"string",
       "Interned strings (kernel names, NVTX paths): one row per distinct string.",
       {{"id", "INTEGER PRIMARY KEY", "String id, referenced by *_id columns."},
        {"value", "TEXT NOT NULL UNIQUE", "The string."}},
       {},
       ""},
      {"process",
       "One row per profiled process. A merged database holds one per rank.",
       {{"id", "INTEGER PRIMARY KEY", "Process id within this database."},
        {"pid", "INTEGER NOT NULL", "Operating-system process id."},
        {"host", "TEXT NOT NULL", "Host name."},
        {"rank", "INTEGER", "Global rank (RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK, MV2_COMM_WORLD_RANK); NULL if none."},
        {"local_rank", "INTEGER", "Rank on its host (LOCAL_RANK, ...); NULL if none."},
        {"command_line", "TEXT NOT NULL", "The profiled command line, arguments space-separated."},
        {"start_unix_ns", "INTEGER NOT NULL", "Wall-clock time the collector started, ns since 1970."}},
       {},
       ""},
      {"device",
       "One row per GPU a process used, with the limits that occupancy and ceilings are computed from.",
       {{"process_id", "INTEGER NOT NULL", "Process that saw the device."},
        {"id", "INTEGER NOT NULL", "CUDA device ordinal in that process."},
        {"name", "TEXT NOT NULL", "Marketing name, e.g. 'NVIDIA H100 80GB HBM3'."},
        {"uuid", "TEXT NOT NULL", "Device UUID ('' if unknown)."},
        {"compute_major", "INTEGER NOT NULL", "Compute capability, major."},
        {"compute_minor", "INTEGER NOT NULL", "Compute capability, minor."},
        {"sm_count", "INTEGER NOT NULL", "Streaming multiprocessors."},
        {"max_threads_per_sm", "INTEGER NOT NULL", "Resident threads per SM."},
        {"max_threads_per_block", "INTEGER NOT NULL", "Threads per block."},
        {"max_blocks_per_sm", "INTEGER NOT NULL", "Resident blocks per SM."},
        {"max_warps_per_sm", "INTEGER NOT NULL", "Resident warps per SM."},
        {"regs_per_sm", "INTEGER NOT NULL", "32-bit registers per SM."},
        {"regs_per_block", "INTEGER NOT NULL", "32-bit registers per block."},
        {"warp_size", "INTEGER NOT NULL", "Threads per warp."},
        {"shared_per_sm_bytes", "INTEGER NOT NULL", "Shared memory per SM."},
        {"shared_per_block_bytes", "INTEGER NOT NULL", "Shared memory per block without opt-in."},
        {"shared_per_block_optin_bytes", "INTEGER NOT NULL", "Shared memory per block with opt-in."},
        {"reserved_shared_per_block_bytes", "INTEGER NOT NULL", "Shared memory the system reserves per block."},
        {"l2_bytes", "INTEGER NOT NULL", "L2 cache size."},
        {"global_memory_bytes", "INTEGER NOT NULL", "Device memory size."},
        {"memory_bus_width_bits", "INTEGER NOT NULL", "Memory bus width."},
        {"memory_clock_khz", "INTEGER NOT NULL", "Peak memory clock (0 if not reported)."},
        {"sm_clock_khz", "INTEGER NOT NULL", "Peak SM clock (0 if not reported)."}},
       {},
       "PRIMARY KEY (process_id, id)"},
      {"nvtx_range",
       "NVTX ranges (push/pop and start/end), all domains.",
       {{"id", "INTEGER PRIMARY KEY", "Range id within this database."},
        {"process_id", "INTEGER NOT NULL", "Process that opened it."},
        {"parent_id", "INTEGER", "Enclosing push/pop range on the same thread; NULL at the top."},
        {"domain", "TEXT NOT NULL", "NVTX domain ('' = default domain)."},
        {"message", "TEXT NOT NULL", "Range message."},
        {"payload", "INTEGER", "Integer payload, if one was given."},
        {"thread_id", "INTEGER NOT NULL", "Host thread (push/pop ranges)."},
        {"depth", "INTEGER NOT NULL", "Nesting depth, 0 at the top."},
        {"start_ns", "INTEGER NOT NULL", "Push/start time, CUPTI clock (same as kernels)."},
        {"end_ns", "INTEGER", "Pop/end time; NULL if still open at exit."},
        {"push_pop", "INTEGER NOT NULL", "1 for push/pop ranges, 0 for start/end ranges."}},
       {"CREATE INDEX nvtx_range_parent ON nvtx_range(parent_id)"},
       ""},
      {"kernel",
       "One row per kernel execution (trace mode).",
       {{"id", "INTEGER PRIMARY KEY", "Kernel id within this database."},
        {"process_id", "INTEGER NOT NULL", "Process that launched it."},
        {"device_id", "INTEGER NOT NULL", "CUDA device ordinal."},
        {"context_id", "INTEGER NOT NULL", "CUDA context id."},
        {"stream_id", "INTEGER NOT NULL", "CUDA stream id."},
        {"correlation_id", "INTEGER NOT NULL", "CUPTI correlation id of the launch (joins kernel_arg)."},
        {"thread_id", "INTEGER NOT NULL", "Launching host thread (0 if unknown)."},
        {"start_ns", "INTEGER NOT NULL", "GPU start, CUPTI clock in ns."},
        {"end_ns", "INTEGER NOT NULL", "GPU end, CUPTI clock in ns."},
        {"duration_ns", "INTEGER NOT NULL", "end_ns - start_ns."},
        {"name_id", "INTEGER NOT NULL REFERENCES string(id)", "Mangled kernel name."},
        {"demangled_id", "INTEGER NOT NULL REFERENCES string(id)", "Demangled kernel name."},
        {"grid_x", "INTEGER NOT NULL", "Grid size in blocks, x."},
        {"grid_y", "INTEGER NOT NULL", "Grid size, y."},
        {"grid_z", "INTEGER NOT NULL", "Grid size, z."},
        {"block_x", "INTEGER NOT NULL", "Block size in threads, x."},
        {"block_y", "INTEGER NOT NULL", "Block size, y."},
        {"block_z", "INTEGER NOT NULL", "Block size, z."},
        {"cluster_x", "INTEGER NOT NULL", "Thread-block cluster size, x (0 = no cluster)."},
        {"cluster_y", "INTEGER NOT NULL", "Cluster size, y."},
        {"cluster_z", "INTEGER NOT NULL", "Cluster size, z."},
        {"registers_per_thread", "INTEGER NOT NULL", "Registers per thread."},
        {"static_shared_bytes", "INTEGER NOT NULL", "Static shared memory per block."},
        {"dynamic_shared_bytes", "INTEGER NOT NULL", "Dynamic shared memory per block."},
        {"local_bytes_per_thread", "INTEGER NOT NULL", "Local memory per thread (stack frame, spills)."},
        {"local_bytes_total", "INTEGER NOT NULL", "Local memory reserved for the launch."},
        {"shared_carveout_bytes", "INTEGER NOT NULL", "Shared-memory carveout the driver configured (0 if unknown)."},
        {"theoretical_occupancy", "REAL", "Resident warps / max warps per SM, 0..1; NULL if unknown."},
        {"theoretical_blocks_per_sm", "INTEGER", "Resident blocks per SM; NULL if unknown."},
        {"occupancy_limiter", "TEXT NOT NULL", "What limits occupancy: warps, registers, shared, blocks ('' if unknown)."},
        {"graph_id", "INTEGER NOT NULL", "CUDA graph id (0 = not launched from a graph)."},
        {"graph_node_id", "INTEGER NOT NULL", "CUDA graph node id (0 = none)."},
        {"launch_api", "TEXT NOT NULL", "Outermost launch API, e.g. cudaLaunchKernel ('' for graph nodes)."},
        {"nvtx_range_id", "INTEGER REFERENCES nvtx_range(id)", "Innermost NVTX range open at launch; NULL if none."},
        {"nvtx_path_id", "INTEGER REFERENCES string(id)", "Full NVTX path at launch, 'domain::a/b'; NULL if none."},
        {"programmatic_launch", "INTEGER NOT NULL DEFAULT 0",
         "1 if launched with programmatic stream serialization (programmatic dependent launch): its blocks may "
         "start while the stream's previous kernel still runs and wait for it in griddepcontrol.wait, so "
         "duration_ns includes that wait. fprof's analysis counts such a kernel from the later of start_ns and "
         "its predecessor's end_ns (version 6; 0 in older files)."}},
       {"CREATE INDEX kernel_name ON kernel(name_id)", "CREATE INDEX kernel_start ON kernel(start_ns)",
        "CREATE INDEX kernel_corr ON kernel(process_id, correlation_id)"},
       ""},
      {"kernel_arg",
       "Launch arguments of kernels that may be device pointers, for producer->consumer data flow: every 8-byte "
       "parameter, and the 8-aligned words (at least 4 GiB in value) inside larger parameters, where PyTorch and "
       "others pass pointers in arrays and structs.",
       {{"process_id", "INTEGER NOT NULL", "Process that launched the kernel."},
        {"correlation_id", "INTEGER NOT NULL", "Launch correlation id (joins kernel)."},
        {"arg_index", "INTEGER NOT NULL", "Parameter index."},
        {"offset_bytes", "INTEGER NOT NULL", "Offset of the value in the parameter buffer."},
        {"size_bytes", "INTEGER NOT NULL",
         "Size of the parameter it is in: 8 for an 8-byte parameter, more for a word inside a larger one."},
        {"value", "INTEGER NOT NULL", "Parameter value (a device address if it is a pointer), as signed 64-bit."}},
       {"CREATE INDEX kernel_arg_corr ON kernel_arg(process_id, correlation_id)"},
       ""},
      {"memcpy",
       "Memory copies.",
       {{"id", "INTEGER PRIMARY KEY", "Copy id."},
        {"process_id", "INTEGER NOT NULL", "Process."},
        {"device_id", "INTEGER NOT NULL", "Device."},
        {"context_id", "INTEGER NOT NULL", "Context."},
        {"stream_id", "INTEGER NOT NULL", "Stream."},
        {"correlation_id", "INTEGER NOT NULL", "Correlation id of the API call."},
        {"start_ns", "INTEGER NOT NULL", "Start, CUPTI clock."},
        {"end_ns", "INTEGER NOT NULL", "End, CUPTI clock."},
        {"bytes", "INTEGER NOT NULL", "Bytes copied."},
        {"copy_kind", "TEXT NOT NULL", "HtoD, DtoH, DtoD, HtoH, PtoP, ..."},
        {"src_kind", "TEXT NOT NULL", "Source memory kind."},
        {"dst_kind", "TEXT NOT NULL", "Destination memory kind."},
        {"graph_id", "INTEGER NOT NULL", "CUDA graph id (0 = none)."}},
       {},
       ""},
      {"memcpy_address",
       "Source and destination addresses of device-to-device copies, from the driver API call that issued "
       "them (the activity record has none): data flow passes a copied value on instead of losing every "
       "version on the device. Schema 3.",
       {{"process_id", "INTEGER NOT NULL", "Process."},
        {"correlation_id", "INTEGER NOT NULL", "Correlation id of the API call (as memcpy.correlation_id)."},
        {"src_address", "INTEGER NOT NULL", "Source device address, as signed 64-bit."},
        {"dst_address", "INTEGER NOT NULL", "Destination device address, as signed 64-bit."},
        {"bytes", "INTEGER NOT NULL", "Bytes the call asked to copy."}},
       {},
       "PRIMARY KEY (process_id, correlation_id)"},
      {"memset",
       "Memory sets.",
       {{"id", "INTEGER PRIMARY KEY", "Memset id."},
        {"process_id", "INTEGER NOT NULL", "Process."},
        {"device_id", "INTEGER NOT NULL", "Device."},
        {"context_id", "INTEGER NOT NULL", "Context."},
        {"stream_id", "INTEGER NOT NULL", "Stream."},
        {"correlation_id", "INTEGER NOT NULL", "Correlation id of the API call."},
        {"start_ns", "INTEGER NOT NULL", "Start, CUPTI clock."},
        {"end_ns", "INTEGER NOT NULL", "End, CUPTI clock."},
        {"bytes", "INTEGER NOT NULL", "Bytes set."},
        {"value", "INTEGER NOT NULL", "Value written."},
        {"memory_kind", "TEXT NOT NULL", "Memory kind."},
        {"graph_id", "INTEGER NOT NULL", "CUDA graph id (0 = none)."}},
       {},
       ""},
      {"memory_event",
       "Device-memory allocations and frees, in time order.",
       {{"id", "INTEGER PRIMARY KEY", "Event id."},
        {"process_id", "INTEGER NOT NULL", "Process."},
        {"device_id", "INTEGER NOT NULL", "Device."},
        {"context_id", "INTEGER NOT NULL", "Context."},
        {"stream_id", "INTEGER NOT NULL", "Stream (stream-ordered allocators), else 0."},
        {"correlation_id", "INTEGER NOT NULL", "Correlation id of the API call."},
        {"timestamp_ns", "INTEGER NOT NULL", "When, CUPTI clock."},
        {"operation", "TEXT NOT NULL", "'alloc' or 'free'."},
        {"address", "INTEGER NOT NULL", "Device address, as signed 64-bit."},
        {"bytes", "INTEGER NOT NULL", "Size of the allocation."},
        {"memory_kind", "TEXT NOT NULL", "device, managed, pinned, ..."}},
       {"CREATE INDEX memory_event_address ON memory_event(address)"},
       ""},
      {"kernel_counter",
       "Hardware-counter results per kernel (metrics mode). NULL = not collected, never 0. FLOPs count "
       "an FMA as 2; tensor-core FLOPs are calibrated so a GEMM of M*N*K reads 2*M*N*K.",
       {{"kernel_id", "INTEGER PRIMARY KEY REFERENCES kernel(id)", "The kernel."},
        {"dram_read_bytes", "REAL", "Bytes read from device memory (dram__bytes_read.sum)."},
        {"dram_write_bytes", "REAL", "Bytes written to device memory (dram__bytes_write.sum)."},
        {"l2_bytes", "REAL",
         "Bytes the SMs read and wrote at the L2: 32 x lts__t_sectors_srcunit_tex.sum where collected (the sets "
         "memory, roofline, full), else lts__t_bytes.sum (custom lists, recordings before 2026-11-28), which also "
         "counts the traffic between the L2's partitions (GH100); both raw counters are in kernel_metric."},
        {"l1_bytes", "REAL", "Bytes through L1/TEX (l1tex__t_bytes.sum)."},
        {"flops_fp64", "REAL", "FP64 FLOPs (dadd + dmul + 2 dfma)."},
        {"flops_fp32", "REAL", "FP32 FLOPs (fadd + fmul + 2 ffma)."},
        {"flops_fp16", "REAL", "FP16 FLOPs on the non-tensor pipe (hadd + hmul + 2 hfma)."},
        {"flops_bf16", "REAL", "BF16 FLOPs on the non-tensor pipe."},
        {"flops_tensor_fp16", "REAL", "Tensor-core FLOPs, fp16 inputs."},
        {"flops_tensor_bf16", "REAL", "Tensor-core FLOPs, bf16 inputs."},
        {"flops_tensor_tf32", "REAL", "Tensor-core FLOPs, tf32 inputs."},
        {"flops_tensor_fp8", "REAL", "Tensor-core FLOPs, fp8 inputs."},
        {"flops_tensor_fp64", "REAL", "Tensor-core FLOPs, fp64."},
        {"ops_tensor_int8", "REAL", "Tensor-core integer ops, int8 inputs."},
        {"achieved_occupancy", "REAL", "Achieved active warps / max warps, 0..1."},
        {"local_load_bytes", "REAL", "Local-memory (spill/stack) load bytes."},
        {"local_store_bytes", "REAL", "Local-memory (spill/stack) store bytes."},
        {"instructions", "REAL", "Warp-level instructions executed."},
        {"gpu_time_ns", "REAL", "GPU time from the counter (gpu__time_duration.sum)."},
        {"source", "TEXT NOT NULL DEFAULT 'profiled'",
         "How the values were obtained: 'profiled' (this launch was replayed under the range profiler) or "
         "'same_signature' (copied from source_kernel_id, an earlier launch of the same function with the same "
         "grid, block, shared memory and non-pointer argument bytes; for a kernel of a CUDA graph, such a launch "
         "outside the graph, before or after it, compared without cluster shape and 1-byte arguments as "
         "docs/metrics.md says)."},
        {"source_kernel_id", "INTEGER", "For same_signature: the profiled kernel whose values these are."},
        {"signature_varies", "INTEGER",
         "1: profiled launches of this signature gave different counts (data-dependent); 0: they agreed; NULL: one "
         "sample."},
        {"half_flops_method", "TEXT",
         "How flops_fp16/flops_bf16 were counted per lane (packed HFMA2 = 2 lanes, lane-broadcast = 1, "
         "conversions = 0), from the function's SASS, with HFMA2 split by pipe (FMA pipe, HFMA2.MMA) where "
         "sm__thread_inst_executed_pipe_fma_type_fp16_pred_on.sum was collected; or 'per instruction: ...' where "
         "each HADD2/HMUL2/HFMA2 was counted on its own (SASS patching in application replay's second run), exact "
         "whatever forms the function mixes; or why they are unknown, with bounds; NULL if the kernel ran no half "
         "instructions."},
        {"tensor_flops_method", "TEXT",
         "How flops_tensor_* were counted where the metric set had no sm__ops_path_tensor_* counters: the tensor "
         "pipe's active cycles (sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active) times the ops a cycle "
         "of the function's MMA instructions (from its SASS; rates calibrated on GH100), and DMMA instructions "
         "times their shape's FLOPs; or why they are unknown; NULL where ops_path counters gave them directly or "
         "the kernel ran no tensor instructions."}},
       {},
       ""},
      {"kernel_counter_missing",
       "A kernel of a metrics-mode run that has no counters, and why: every kernel of such a run has a "
       "kernel_counter row or a row here.",
       {{"kernel_id", "INTEGER PRIMARY KEY REFERENCES kernel(id)", "The kernel."},
        {"reason", "TEXT NOT NULL", "Why, e.g. 'cooperative launch: not replayed', 'not selected (--kernel-regex)'."}},
       {},
       ""},
      {"function",
       "Per process and kernel function: facts the driver reports once for the function (not per launch).",
       {{"process_id", "INTEGER NOT NULL", "Process."},
        {"name_id", "INTEGER NOT NULL REFERENCES string(id)", "Mangled function name (as kernel.name_id)."},
        {"registers_per_thread", "INTEGER",
         "CU_FUNC_ATTRIBUTE_NUM_REGS: registers per thread as `ptxas -v` reports them (kernel.registers_per_thread "
         "is CUPTI's allocated count, rounded up); NULL if unknown."},
        {"local_bytes_per_thread", "INTEGER", "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES (stack frame + spills)."},
        {"static_shared_bytes", "INTEGER", "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES."},
        {"const_bytes", "INTEGER", "CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES."},
        {"max_threads_per_block", "INTEGER", "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK."},
        {"binary_version", "INTEGER", "SASS architecture the function was built for (e.g. 90)."},
        {"ptx_version", "INTEGER", "PTX virtual architecture (e.g. 90)."}},
       {},
       "PRIMARY KEY (process_id, name_id)"},
      {"function_arg",
       "What each pointer argument of a kernel function does, measured by comparing a sample of the memory "
       "behind it before and after one launch.",
       {{"process_id", "INTEGER NOT NULL", "Process."},
        {"name_id", "INTEGER NOT NULL REFERENCES string(id)", "Mangled function name."},
        {"arg_index", "INTEGER NOT NULL", "Parameter index (as kernel_arg.arg_index)."},
        {"role", "TEXT NOT NULL",
         "'write' (sampled bytes changed during the launch), 'read' (a device address whose sampled bytes did not "
         "change: read or unused) or 'not_pointer' (no device address)."},
        {"method", "TEXT NOT NULL", "How the role was obtained, in words."},
        {"sampled_bytes", "INTEGER", "Bytes compared."},
        {"correlation_id", "INTEGER", "The launch it was measured on; NULL if unknown."},
        {"offset_bytes", "INTEGER NOT NULL DEFAULT 0",
         "Offset of the pointer in the parameter buffer (as kernel_arg.offset_bytes): a parameter may hold several."}},
       {},
       "PRIMARY KEY (process_id, name_id, arg_index, offset_bytes)"},
      {"function_sass_op",
       "Static SASS instruction counts per function for the FLOP-relevant half-precision opcodes, by lane use: "
       "what half_flops_method is derived from.",
       {{"process_id", "INTEGER NOT NULL", "Process."},
        {"name_id", "INTEGER NOT NULL REFERENCES string(id)", "Mangled function name."},
        {"opcode", "TEXT NOT NULL",
         "Opcode class: opcode, .MMA where it runs on the MMA pipe, precision (f16, bf16) and form (packed: 2 "
         "lanes, scalar: lane-broadcast operands, 1 lane, zero: immediate move or conversion, other: compare or "
         "min/max), e.g. HFMA2.MMA.f16.packed, HFMA2.f16.scalar, HADD2.f16.zero, HMNMX2.bf16.other; and each tensor-core instruction as nvdisasm prints it, prefixed mma: (e.g. mma:HGMMA.64x128x16.F32.BF16), which tensor_flops_method is derived from."},
        {"static_count", "INTEGER NOT NULL", "Instructions of that class in the function's SASS."}},
       {},
       "PRIMARY KEY (process_id, name_id, opcode)"},
      {"kernel_metric",
       "Raw counter values per kernel, by metric name: where every kernel_counter number comes from.",
       {{"kernel_id", "INTEGER NOT NULL REFERENCES kernel(id)", "The kernel."},
        {"metric_id", "INTEGER NOT NULL REFERENCES string(id)",
         "Metric name, e.g. dram__bytes_read.sum; names starting fprof__ are fprof's own sums over per-instruction "
         "counts (fprof__sass_per_pc_flops_fp16.sum, ..._bf16.sum: half FLOPs per lane, SASS patching)."},
        {"value", "REAL NOT NULL", "Value as the profiler evaluated it."}},
       {},
       "PRIMARY KEY (kernel_id, metric_id)"},
      {"graph_launch_counter",
       "Counters of a CUDA graph launch as a whole (metrics mode, application replay): the range profiler "
       "counted everything the launch's kernels did as one range, so each value is the sum over its kernels "
       "(the kernel rows with this process_id and correlation_id), the occupancy an average and gpu_time_ns the "
       "range's duration. The kernels themselves keep a kernel_counter_missing reason (or values copied from an "
       "identical launch outside the graph). NULL = not collected (SASS-instrumented counters are not).",
       {{"process_id", "INTEGER NOT NULL REFERENCES process(id)", "The process."},
        {"correlation_id", "INTEGER NOT NULL", "The graph launch call's correlation id, shared by its kernels."},
        {"dram_read_bytes", "REAL", "As kernel_counter, summed over the launch's kernels."},
        {"dram_write_bytes", "REAL", "As kernel_counter."},
        {"l2_bytes", "REAL", "As kernel_counter."},
        {"l1_bytes", "REAL", "As kernel_counter."},
        {"flops_fp64", "REAL", "As kernel_counter."},
        {"flops_fp32", "REAL", "As kernel_counter."},
        {"flops_fp16", "REAL", "As kernel_counter."},
        {"flops_bf16", "REAL", "As kernel_counter."},
        {"flops_tensor_fp16", "REAL", "As kernel_counter."},
        {"flops_tensor_bf16", "REAL", "As kernel_counter."},
        {"flops_tensor_tf32", "REAL", "As kernel_counter."},
        {"flops_tensor_fp8", "REAL", "As kernel_counter."},
        {"flops_tensor_fp64", "REAL", "As kernel_counter."},
        {"ops_tensor_int8", "REAL", "As kernel_counter."},
        {"achieved_occupancy", "REAL", "Average over the range, 0..1."},
        {"local_load_bytes", "REAL", "As kernel_counter."},
        {"local_store_bytes", "REAL", "As kernel_counter."},
        {"instructions", "REAL", "As kernel_counter."},
        {"gpu_time_ns", "REAL", "The range's duration (gpu__time_duration.sum)."}},
       {},
       "PRIMARY KEY (process_id, correlation_id)"},
      {"graph_launch_metric",
       "Raw counter values per counted graph launch, by metric name: where every graph_launch_counter number "
       "comes from.",
       {{"process_id", "INTEGER NOT NULL REFERENCES process(id)", "The process."},
        {"correlation_id", "INTEGER NOT NULL", "The graph launch call's correlation id."},
        {"metric_id", "INTEGER NOT NULL REFERENCES string(id)", "Metric name, e.g. dram__bytes_read.sum."},
        {"value", "REAL NOT NULL", "Value as the profiler evaluated it."}},
       {},
       "PRIMARY KEY (process_id, correlation_id, metric_id)"},
      {"ceiling",
       "Roofs of the roofline per GPU model: bandwidths (bytes/s) and compute rates (FLOP/s), measured "
       "by `fprof ceilings` or computed from the datasheet/device attributes.",
       {{"device_name", "TEXT NOT NULL", "GPU model, as device.name."},
        {"ceiling", "TEXT NOT NULL", "dram, l2, l1, fp64, fp32, fp16, bf16, tensor_fp16, tensor_bf16, ..."},
        {"unit", "TEXT NOT NULL", "bytes_per_s or flops_per_s."},
        {"value", "REAL NOT NULL", "The rate."},
        {"source", "TEXT NOT NULL", "measured or datasheet."},
        {"method", "TEXT NOT NULL", "How it was measured or computed."}},
       {},
       "PRIMARY KEY (device_name, ceiling, source)"},
      {"collector_event",
       "Warnings and notes from the collector (degraded mode, dropped records, ...).",
       {{"id", "INTEGER PRIMARY KEY", "Event id."},
        {"process_id", "INTEGER NOT NULL", "Process."},
        {"timestamp_ns", "INTEGER NOT NULL", "When, CUPTI clock (0 if before CUPTI started)."},
        {"severity", "TEXT NOT NULL", "info, warning or error."},
        {"message", "TEXT NOT NULL", "What happened and what to do."}},
       {},
       ""},
  };
}

std::vector<ViewDef> makeViews() {
  return {
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
       "FROM nvtx_range WHERE end_ns IS NOT NULL GROUP BY domain, message ORDER BY total_ns DESC"},
  };
}

}  // namespace

const std::vector<TableDef>& schemaTables() {
  static const std::vector<TableDef> tables = makeTables();
  return tables;
}

const std::vector<ViewDef>& schemaViews() {
  static const std::vector<ViewDef> views = makeViews();
  return views;
}

std::string schemaIndexSql() {
  std::ostringstream sql;
  for (const TableDef& t : schemaTables()) {
    for (const std::string& idx : t.indexes) sql << idx << ";\n";
  }
  return sql.str();
}

std::string schemaCreateSql(bool with_indexes) {
  std::ostringstream sql;
  for (const TableDef& t : schemaTables()) {
    sql << "CREATE TABLE " << t.name << " (";
    for (size_t i = 0; i < t.columns.size(); ++i) {
      sql << (i ? ", " : "") << t.columns[i].name << ' ' << t.columns[i].type;
    }
    if (!t.table_constraints.empty()) sql << ", " << t.table_constraints;
    sql << ");\n";
  }
  if (with_indexes) sql << schemaIndexSql();
  for (const ViewDef& v : schemaViews()) sql << "CREATE VIEW " << v.name << " AS " << v.select_sql << ";\n";
  return sql.str();
}

std::string schemaMarkdown() {
  std::ostringstream md;
  md << "# The .fprof database schema (version " << kSchemaVersion << ")\n\n"
     << "Generated from `core/src/schema.cpp` by `fprof schema --markdown`; a test fails when this file\n"
     << "and the code disagree. A `.fprof` file is a SQLite database (application id 0x46505246);\n"
     << "`metadata.schema_version` says which version of this schema it holds. Times are in ns on the\n"
     << "CUPTI clock unless a column says otherwise; `*_id` columns naming strings point into `string`.\n\n";
  for (const TableDef& t : schemaTables()) {
    md << "## Table `" << t.name << "`\n\n" << t.doc << "\n\n| column | type | meaning |\n| --- | --- | --- |\n";
    for (const ColumnDef& c : t.columns) md << "| `" << c.name << "` | " << c.type << " | " << c.doc << " |\n";
    if (!t.table_constraints.empty()) md << "\nConstraint: `" << t.table_constraints << "`.\n";
    md << '\n';
  }
  md << "## Views\n\n";
  for (const ViewDef& v : schemaViews()) md << "### `" << v.name << "`\n\n" << v.doc << "\n\n";
  return md.str();
}

}  // namespace fprof::core
