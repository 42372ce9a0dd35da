// fprof run: maps the command line to runner::RunOptions; the runner library plans the runs,
// starts the program with the collector injected and puts the databases in place (runner/).
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "fprof/core/environment.h"
#include "fprof/runner/runner.h"
#include "paths.h"

namespace fprof::cli {
namespace {

using runner::RunOptions;

// What is installed beside fprof: in the build tree and when installed, ../lib next to bin/fprof.
runner::Tools installedTools() {
  runner::Tools tools;
  tools.collector = core::env::Parser(core::env::processEnvironment()).text(core::env::Var::kCollector);
  if (tools.collector.empty()) tools.collector = findSibling("libfprof_collector.so");
  tools.preload = findSibling("libfprof_preload.so");
  tools.metrics_host = findSibling("fprof-metrics-host");
  tools.ceilings_cache_path = ceilingsCachePath;
  return tools;
}

// Where the run writes and what it runs with.
void addRunOptions(CLI::App* app, RunOptions& opt) {
  app->add_option("-o,--output", opt.output,
                  "Database to write (default: PROGRAM.fprof, or PROGRAM-2.fprof, ... if that exists)");
  app->add_flag("--force", opt.force,
                "Replace the output database if it exists, once this run has written its own: the new files are "
                "written into a folder beside it (.NAME.run<PID>-XXXXXX) and moved over the files of the same names when "
                "the program has ended (fprof killed meanwhile leaves them there); files of ranks or processes "
                "this run did not write stay. A program that cannot be started changes nothing");
  app->add_flag("--explain", opt.explain,
                "Print the plan of the run (which runs of the program, what each counts and how, how they are "
                "joined, each fallback and its trigger) and exit without running the program. Each database "
                "keeps the plan in metadata run_plan");
  app->add_flag("--gpu-fault-safe", opt.gpu_fault_safe,
                "Keep kernel timestamps in pinned host memory, so that a GPU fault that kills the context (an illegal "
                "address) leaves the kernels before it with their times; without it CUPTI's device-side timestamp "
                "buffers die with the context. Costs launch-bound programs more (docs/overhead.md)");
  app->add_option("--ceilings", opt.ceilings,
                  "Attach measured ceilings from this file (default: the per-user cache of 'fprof ceilings')")
      ->check(CLI::ExistingFile);
  app->add_option("--cupti", opt.cupti,
                  "Use this libcupti.so.13 (e.g. from the nvidia-cuda-cupti wheel) instead of the toolkit's; also "
                  "FPROF_CUPTI");
}

// What metrics mode profiles.
void addSelectionOptions(CLI::App* app, RunOptions& opt) {
  app->add_option("--metrics", opt.metrics,
                  "Hardware counters per kernel (CUPTI range profiler; --replay says how): a set (memory, roofline, full; "
                  "see 'fprof metrics list') or metric names separated by commas")
      ->type_name("SET|LIST");
  app->add_option("--kernel-regex", opt.kernel_regex,
                  "With --metrics: profile only kernels whose demangled name matches (ECMAScript regex, searched)");
  app->add_option("--nvtx-include", opt.nvtx_include,
                  "With --metrics: profile only kernels launched inside an NVTX range whose path contains this text "
                  "(repeatable; any matches)")
      ->delimiter(',');
  app->add_option("--nvtx-scope", opt.nvtx_scope,
                  "With --nvtx-include: 'process' (default): a push/pop range that matches, open on any thread, selects "
                  "the kernels every thread launches meanwhile (PyTorch runs the backward on autograd's thread); "
                  "'thread': only the launching thread's own ranges count, as in Nsight Compute")
      ->check(CLI::IsMember({"process", "thread"}));
  app->add_option("--ops", opt.ops,
                  "With --metrics: profile only kernels inside NVTX op ranges of these names (op=<name>, "
                  "docs/nvtx-convention.md)")
      ->delimiter(',');
  app->add_option("--launch-skip", opt.launch_skip, "With --metrics: let this many selected launches run first")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--launch-count", opt.launch_count, "With --metrics: profile at most this many selected launches")
      ->check(CLI::PositiveNumber);
  app->add_option("--samples-per-launch-kind", opt.samples_per_launch_kind,
                  "With --metrics: launches profiled per launch signature (function, grid, block, shared memory and "
                  "non-pointer argument bytes; default 1); later identical launches get the measured values, marked "
                  "'same_signature'. Under application replay also the launches of each executable CUDA graph that "
                  "are counted whole")
      ->check(CLI::PositiveNumber);
  app->add_flag("--every-launch", opt.every_launch, "With --metrics: profile every selected launch (no copies)");
}

// How metrics mode counts.
void addCountingOptions(CLI::App* app, RunOptions& opt) {
  app->add_option("--cache-control", opt.cache_control,
                  "With --metrics: all = invalidate caches before every replay pass, as ncu does by default (under "
                  "kernel replay this needs CUPTI 13.4: see --cupti; under application replay fprof empties the L2 "
                  "itself, so with the toolkit's CUPTI --cache-control all picks application replay); none = caches "
                  "as the program left them. Default: all where possible, else none, recorded in the database")
      ->check(CLI::IsMember({"all", "none"}));
  app->add_option("--replay", opt.replay,
                  "With --metrics: kernel = CUPTI replays each profiled kernel once per pass, saving and restoring "
                  "device memory; application = the program's own run of each profiled launch is counted (no "
                  "replay; the L2 emptied by fprof before each with --cache-control all), SASS-instrumented "
                  "counters (FLOPs, instructions) from a duplicate of each profiled launch in the same run (a "
                  "second run of the program where that stops, or with --second-run), and each "
                  "executable CUDA graph's first launch counted whole, as one range; auto (default) = application "
                  "where the set's hardware counters fit one pass (memory, roofline) and the caches can be emptied "
                  "that way (not with --cache-control none or --cupti), else kernel")
      ->check(CLI::IsMember({"auto", "kernel", "application"}));
  app->add_option("--second-run", opt.second_run,
                  "With --replay application and a set with FLOP or instruction counters: by default the program "
                  "runs once, and CUPTI's SASS Metrics API counts each profiled launch's instructions per PC in a "
                  "duplicate of the launch run between a checkpoint of the device memory and its restore (fp16/bf16 "
                  "FLOPs exact per instruction); a second run of the program counts them only where that stops (a "
                  "checkpoint too slow, a launch it cannot repeat). This option always makes the second run: "
                  "patching = by the SASS Metrics API, no replay (a run that takes more than 3 x the first run + 60 "
                  "s is stopped and made again under kernel replay); kernel = kernel replay (one pass)")
      ->check(CLI::IsMember({"patching", "kernel"}));
}

}  // namespace

Command addRunCommand(CLI::App& root) {
  auto opt = std::make_shared<RunOptions>();
  CLI::App* app = root.add_subcommand(
      "run",
      "Run PROGRAM with the CUPTI collector injected and record every kernel, NVTX range, copy and allocation "
      "into a .fprof database. The program is not modified; its exit code is passed through. Under "
      "torchrun/mpirun/srun each rank writes NAME.rank<N>.fprof. SIGINT, SIGTERM and SIGHUP sent to fprof "
      "are passed on to the program, as a shell does; fprof waits for it and records how it ended (a second "
      "SIGINT stops the waiting). The last line names the database holding the program's kernels.");
  addRunOptions(app, *opt);
  addSelectionOptions(app, *opt);
  addCountingOptions(app, *opt);
  // Everything from PROGRAM on belongs to the program, its options included.
  app->prefix_command();
  app->footer(
      "Usage: fprof run [-o FILE] [--force] [--metrics SET ...] PROGRAM [ARGS...]\n"
      "Examples:\n  fprof run ./model --ops all\n  fprof run -o train.fprof python train.py\n"
      "  fprof run --metrics roofline --kernel-regex gemm --launch-count 20 ./model\n"
      "  fprof run --explain --metrics roofline ./model\n"
      "  torchrun --nproc-per-node 2 $(which fprof) run -o job.fprof python train.py");
  return {app, [opt, app] {
            opt->program = app->remaining();
            if (!opt->program.empty() && opt->program.front() == "--") opt->program.erase(opt->program.begin());
            return runner::runProgram(*opt, installedTools());
          }};
}

}  // namespace fprof::cli
