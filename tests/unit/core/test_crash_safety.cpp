// A writer SIGKILLed mid-batch leaves a readable database with every batch it committed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fprof/core/store.h"
#include "test_util.h"

namespace fprof::core {
namespace {

using fprof::testing::makeKernel;
using fprof::testing::tempPath;

constexpr int kBatch = 500;

// Child: writes batches forever, telling the parent after each commit; never returns. The kill
// lands while the next batch is being buffered or half-written into the WAL, never committed.
[[noreturn]] void writeUntilKilled(const std::string& path, int report_fd) {
  auto w = Writer::create(path);
  if (!w.ok()) _exit(3);
  for (int batch = 0;; ++batch) {
    for (int i = 0; i < kBatch; ++i) (*w)->add(makeKernel("k", int64_t{batch} * kBatch + i, 1, 0));
    if (!(*w)->flush()) _exit(4);
    const char c = 'x';
    if (write(report_fd, &c, 1) != 1) _exit(5);
  }
}

TEST(CrashSafety, KilledWriterLeavesCommittedBatches) {
  const std::string path = tempPath("killed.fprof");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    writeUntilKilled(path, fds[1]);
  }
  close(fds[1]);
  int commits = 0;
  char c;
  while (commits < 5 && read(fds[0], &c, 1) == 1) ++commits;
  ASSERT_EQ(commits, 5);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  close(fds[0]);
  ASSERT_TRUE(WIFSIGNALED(status));

  auto p = loadProfile(path);
  ASSERT_TRUE(p.ok()) << p.error();
  // At least the 5 batches it reported; the kill may land after a later commit, never inside one.
  EXPECT_GE(p->kernels.size(), size_t{5} * kBatch);
  EXPECT_EQ(p->kernels.size() % kBatch, 0u) << "a partial batch became visible";
  for (const KernelRow& k : p->kernels) EXPECT_EQ(p->str(k.name_id), "k");
}

}  // namespace
}  // namespace fprof::core
