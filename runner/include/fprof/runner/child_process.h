// Starting the profiled program and waiting for it as a shell does: SIGINT, SIGTERM and SIGHUP
// sent to fprof are passed on to the program, and fprof waits for it to end, so that its
// collector completes the database and fprof records how it ended.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace fprof::runner {

struct StartedProgram {
  pid_t pid = -1;            // -1: not started
  int error = 0;             // why not: fork's or exec's errno
  bool exec_failed = false;  // the program itself could not be run (not found, not executable)
};

// Runs `argv` (the program searched in PATH) with exactly `environment` ("NAME=value" entries).
StartedProgram startProgram(const std::vector<std::string>& argv, const std::vector<std::string>& environment);

struct WaitOutcome {
  enum class Ending {
    kEnded,      // `status` holds its wait status
    kTimedOut,   // past the deadline: killed (SIGKILL) and reaped
    kAbandoned,  // a second SIGINT: fprof stopped waiting, the program runs on
    kLost,       // waitpid failed (not fprof's child)
    kNotStarted, // fork or exec failed
  };
  Ending ending = Ending::kLost;
  int status = 0;  // kEnded: the wait status; kNotStarted: the exit code fprof run gives (127, or 2)
  std::vector<int> forwarded;  // the signals passed on to the program, in order
};

// Waits for `child`. SIGINT, SIGTERM and SIGHUP sent to fprof by another process are passed on to
// the program; one a terminal sends has reached it already (it is in fprof's process group) and
// is not sent twice. A second SIGINT, however sent, stops the waiting. With a deadline, a program
// past it is killed and reaped. fprof's own dispositions are restored on return.
WaitOutcome waitForProgram(pid_t child, std::optional<std::chrono::steady_clock::time_point> deadline = {});

// "SIGTERM" for SIGTERM.
std::string signalName(int sig);

}  // namespace fprof::runner
