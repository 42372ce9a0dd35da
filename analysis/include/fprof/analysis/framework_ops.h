// Ops as frameworks already mark them with NVTX, next to fprof's own `op=` convention (nvtx_ops.h):
//   - PyTorch, torch.autograd.profiler.emit_nvtx(): one range per op call, "aten::mm, seq = 12,
//     op_id = 724, sizes = [[4, 256], [256, 256]], input_op_ids = [(723,0), (0,0)]" (sizes and
//     input_op_ids with record_shapes=True). The op is the name without its suffixes. Ops nest
//     (aten::linear calls aten::t and aten::addmm); a kernel belongs to the OUTERMOST op range
//     around it -- the call the program made (aten::linear, aten::layer_norm, aten::softmax), and
//     the op emit_nvtx's input_op_ids name as a tensor's producer (its table is updated as each op
//     returns, the outer one last). Backward ops are named after their autograd node
//     ("autograd::engine::evaluate_function: MmBackward0" -> "MmBackward0").
//   - record_function / torch.cuda.nvtx.range / nn.Module names pushed by hooks: user ranges, named
//     by their text (record_function's under emit_nvtx lose their op_id suffix too).
//   - XLA (JAX, TensorFlow), domain "TSL": "XlaModule:#hlo_module=jit_step,program_id=3#" around a
//     program and "Thunk:#name=...,hlo_op=fusion.3,unique_hlo_op_id=42#" around each HLO op's
//     kernels; the op is the hlo_op, and a kernel belongs to the innermost one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fprof/core/store.h"

namespace fprof::analysis {

enum class FrameworkRangeKind : uint8_t {
  kNone,       // fprof's own op= convention (nvtx_ops.h) or nothing recognizable
  kTorchOp,    // a PyTorch dispatcher op under emit_nvtx (aten::, prim::, a custom namespace::)
  kUserRange,  // record_function, torch.cuda.nvtx.range, module names: a named region
  kXlaModule,
  kXlaOp,
};

struct FrameworkRange {
  FrameworkRangeKind kind = FrameworkRangeKind::kNone;
  std::string name;               // the op or region name without ids and shapes
  std::optional<uint64_t> op_id;  // emit_nvtx's op_id, XLA's unique_hlo_op_id
  std::optional<int64_t> seq;     // emit_nvtx's autograd sequence number
  std::vector<std::vector<int64_t>> sizes;              // input shapes (emit_nvtx record_shapes)
  std::vector<std::pair<uint64_t, int32_t>> input_ops;  // (producer op_id, its output index); 0: none
};

// What one NVTX range says (the domain as recorded: "" for NVTX's default domain).
FrameworkRange parseFrameworkRange(std::string_view domain, std::string_view message);

// A recorded NVTX path (each range "domain::message", or "message" in the default domain, joined
// by '/') with every framework range named as reports name its op: "aten::linear, seq = 3, op_id =
// 12, sizes = [[4, 768], ...]/aten::addmm, op_id = 14, ..." -> "aten::linear/aten::addmm"; an XLA
// thunk by its hlo_op; other ranges as recorded.
std::string nvtxPathOpNames(std::string_view path);

// The framework op that owns each kernel, and the producer -> consumer links between ops that
// emit_nvtx(record_shapes=True) declares.
struct FrameworkOp {
  size_t range_index = 0;  // into Profile::nvtx_ranges
  // Its kind, name, op_id and seq. Not its sizes and input_ops: what the links need of them is on
  // the links (a run of a million op calls would hold every call's shapes).
  FrameworkRange range;
  std::vector<size_t> kernels;  // in start order
};

struct FrameworkOpLink {
  size_t producer = 0;  // indices into FrameworkOps::ops
  size_t consumer = 0;
  int32_t output = 0;   // which output of the producer the consumer read
  int32_t input = 0;    // which input of the consumer it is (an index into its sizes)
  int32_t readers = 0;  // ops that read this output of the producer
  // The consumer's shape of that input (emit_nvtx record_shapes), where its sizes list one shape
  // per input; none where it does not say.
  std::optional<std::vector<int64_t>> input_shape;
};

struct FrameworkOps {
  std::vector<FrameworkOp> ops;        // ops that own kernels, in the order of their first kernel
  std::vector<int32_t> kernel_op;      // per kernel, index into ops or -1
  std::vector<FrameworkOpLink> links;  // by consumer, then input
  // Kernels in no framework op: the user range they were launched in (index into region_names), or -1.
  std::vector<std::string> region_names;
  std::vector<int32_t> kernel_region;
  bool pytorch = false;   // emit_nvtx ranges were seen
  bool op_graph = false;  // ... with input_op_ids (record_shapes=True)
  bool xla = false;
};

FrameworkOps indexFrameworkOps(const core::Profile& p);

struct NvtxRangeKinds;
class NvtxRangeLookup;

// For a run whose NVTX ranges are let go once its ops are indexed (RunAnalysis with
// release_nvtx_ranges): the same index, and meanwhile, before the ops and links are built, the
// messages of PyTorch op ranges nested in another op (several a kernel under emit_nvtx, read by
// nothing once their kinds are known) are let go from `run` (the indexed profile itself, owned by
// the caller), and the others moved down in the blocks the reader held them in
// (Profile::nvtx_messages), the blocks left empty let go; where another profile shares those
// blocks, the others are moved into `kept` instead, which must outlive them. `others_done`
// returns once no other reader of the messages (fprof's op index) is running.
struct NestedMessageRelease {
  core::Profile* run = nullptr;
  core::TextBlock* kept = nullptr;
  std::function<void()> others_done;
  // Where given, every range's kind and op id as readNvtxMessages read them (the messages of
  // nested PyTorch ops were never held, so none are let go), taken instead of parsing the messages.
  NvtxRangeKinds* kinds = nullptr;
};
FrameworkOps indexFrameworkOps(const core::Profile& p, const NestedMessageRelease& release);

// A PyTorch op range that carries an op id: the ranges an emit_nvtx input_op_ids names.
struct TorchOpRange {
  uint32_t process_id = 0;
  uint32_t range = 0;  // index into Profile::nvtx_ranges
  uint64_t op_id = 0;
};
// Every range's kind and op id, from one parse of the messages.
struct NvtxRangeKinds {
  std::vector<FrameworkRangeKind> kind;  // per range
  std::vector<TorchOpRange> torch_op_ids;  // by (process, op id, range)
  bool any = false, pytorch = false, op_graph = false, xla = false;
  // The ranges' parent lookup readNvtxMessages made for the run, which indexing then uses.
  std::shared_ptr<const NvtxRangeLookup> lookup;
};
// For a run loaded without its NVTX messages (core::LoadOptions::nvtx_messages = false), whose
// ranges are let go once its ops are indexed: the messages read from its file once, each parsed
// for its range's kind and op id (returned, for indexFrameworkOps), and held in the run unless the
// range is a PyTorch op nested in another, which nothing reads once its kind is known
// (NestedMessageRelease). A PyTorch run's messages (several ranges of about a hundred characters
// a kernel, most of them nested) then never stand in memory whole.
core::Expected<NvtxRangeKinds> readNvtxMessages(core::Profile& run);

// The name a kernel's op goes by in reports: its framework op, else the innermost user range,
// else "" (fprof's op= convention is read by nvtx_ops.h).
std::string frameworkOpName(const core::Profile& p, const FrameworkOps& ops, size_t kernel_index);

// Bytes per element of the data a kernel works on, read from its name (c10::Half, float,
// __nv_bfloat16, cuBLAS's nvjet_*_hsh_* / _sss_*, ...): an assumption, used only to size an
// intermediate from emit_nvtx's shapes; none when the name does not say.
std::optional<int> elementBytesFromKernelName(std::string_view demangled_name);

}  // namespace fprof::analysis
