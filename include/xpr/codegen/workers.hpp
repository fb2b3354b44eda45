// SPDX-License-Identifier: MIT
// The threads that run a kernel's large elementwise loops in parts, as XLA's CPU backend splits a
// large loop fusion into parallel tasks. A kernel hands the host a range function (its loop over
// [lo, hi)) and the loop's length; the calling thread runs the first part and the workers the
// others. Only loops whose iterations write disjoint elements are split (emit.hpp decides), so
// the results are the same however the loop is split, bit for bit.
#pragma once

#include <cstddef>

#include "xpr/core/config.hpp"

namespace xpr::codegen::detail {

struct Host;

/// A kernel's loop over [lo, hi) of one elementwise group (`g<k>_range` in the generated source).
using RangeFn = void (*)(void* const* b, const long long* n, const Host* h, long long lo,
                         long long hi);

/// How many threads a loop is split among, the caller's included: `XPR_NUM_THREADS` when it is a
/// positive number (1 turns splitting off; anything else is reported on stderr and ignored), else
/// the CPUs this process may run on. Read once.
unsigned jit_threads();

/// Runs `body` over [0, count): in parts on the workers and the calling thread, each part a
/// multiple of 64 elements long (no two threads write one cache line) except the last; returns
/// when every part has run. The workers run under the caller's floating-point environment
/// (rounding mode, flush-to-zero), so every part computes as the caller would, and the
/// exceptions they raise (`FE_INVALID`, `FE_OVERFLOW`...) are raised on the caller before this
/// returns. The workers block every signal. In a child of `fork()` (which has no workers) the
/// loop runs on the calling thread.
void run_in_parts(RangeFn body, void* const* b, const long long* n, const Host* h, long long count);

/// The number of loops split among threads so far in this process (for tests).
std::size_t parts_runs();

}  // namespace xpr::codegen::detail

#if XPR_DEFINITIONS
#include <algorithm>
#include <atomic>
#include <cfenv>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string_view>
#include <thread>
#include <unistd.h>

namespace xpr::codegen::detail {

/// The pool (created on first use, never destroyed: a kernel may run while static objects are
/// being destroyed, and idle workers blocked on the queue cost nothing at exit).
class Workers {
 public:
  static Workers& instance() {
    static Workers* w = new Workers(jit_threads() - 1);
    return *w;
  }

  void run(RangeFn body, void* const* b, const long long* n, const Host* h, long long count);
  std::size_t runs() const noexcept { return runs_.load(std::memory_order_relaxed); }

 private:
  struct Job {
    RangeFn body;
    void* const* b;
    const long long* n;
    const Host* h;
    std::fenv_t env;
    int left = 0;    // parts not yet finished (guarded by the pool's mutex)
    int raised = 0;  // floating-point exceptions the workers' parts raised (likewise)
  };
  struct Part {
    Job* job;
    long long lo, hi;
  };

  explicit Workers(unsigned workers) : pid_(::getpid()) {
    // Workers take no signals: a program that blocks SIGTERM in all its threads and waits for it
    // in one (sigwait) must not have it delivered to a worker, whose default action would end
    // the process. A thread inherits its creator's mask.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (unsigned i = 0; i < workers; ++i) {
      try {
        std::thread([this] { work(); }).detach();
        ++workers_;
      } catch (...) {  // no more threads: the loops split among those there are
        break;
      }
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }

  /// Runs `p` under its caller's environment; returns the exceptions it raised (the flags the
  /// caller tests with `fetestexcept` after the call, as after a loop on one thread).
  static int run_part(const Part& p) {
    std::fenv_t mine;
    std::fegetenv(&mine);
    std::fesetenv(&p.job->env);
    std::feclearexcept(FE_ALL_EXCEPT);
    p.job->body(p.job->b, p.job->n, p.job->h, p.lo, p.hi);
    const int raised = std::fetestexcept(FE_ALL_EXCEPT);
    std::fesetenv(&mine);
    return raised;
  }

  [[noreturn]] void work() {
    std::unique_lock lock(mutex_);
    for (;;) {
      queued_.wait(lock, [&] { return !parts_.empty(); });
      const Part p = parts_.front();
      parts_.pop_front();
      lock.unlock();
      const int raised = run_part(p);
      lock.lock();
      p.job->raised |= raised;
      if (--p.job->left == 0) finished_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable queued_, finished_;
  std::deque<Part> parts_;
  unsigned workers_ = 0;
  const pid_t pid_;
  std::atomic<std::size_t> runs_{0};
};

XPR_FUNC void Workers::run(RangeFn body, void* const* b, const long long* n, const Host* h,
                           long long count) {
  constexpr long long line = 64;     // elements: a cache line of the narrowest dtype (bool)
  constexpr long long least = 4096;  // elements per part at least
  const long long threads = workers_ + 1;
  long long k = std::min(threads, (count + least - 1) / least);
  if (k <= 1 || ::getpid() != pid_) return body(b, n, h, 0, count);
  const long long size = ((count + k - 1) / k + line - 1) / line * line;
  k = (count + size - 1) / size;
  Job job{body, b, n, h, {}, 0};
  std::fegetenv(&job.env);
  {
    std::lock_guard lock(mutex_);
    try {
      for (long long i = 1; i < k; ++i)
        parts_.push_back(Part{&job, i * size, std::min(count, (i + 1) * size)});
    } catch (...) {  // out of memory for the queue: no part may outlive this frame
      std::erase_if(parts_, [&](const Part& q) { return q.job == &job; });
      k = 1;
    }
    job.left = static_cast<int>(k - 1);
  }
  if (k == 1) return body(b, n, h, 0, count);
  queued_.notify_all();
  runs_.fetch_add(1, std::memory_order_relaxed);
  body(b, n, h, 0, size);
  // Parts no worker has taken yet (the workers may be busy with other threads' loops) run here.
  for (;;) {
    Part p{};
    {
      std::lock_guard lock(mutex_);
      auto it =
          std::find_if(parts_.begin(), parts_.end(), [&](const Part& q) { return q.job == &job; });
      if (it == parts_.end()) break;
      p = *it;
      parts_.erase(it);
    }
    body(b, n, h, p.lo, p.hi);
    std::lock_guard lock(mutex_);
    --job.left;
  }
  std::unique_lock lock(mutex_);
  finished_.wait(lock, [&] { return job.left == 0; });
  if (job.raised) std::feraiseexcept(job.raised);
}

XPR_FUNC unsigned jit_threads() {
  static const unsigned threads = [] {
    if (const char* s = std::getenv("XPR_NUM_THREADS")) {
      const std::string_view v(s);
      unsigned t = 0;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), t);
      if (ec == std::errc{} && end == v.data() + v.size() && t >= 1) return std::min(t, 1024U);
      std::fprintf(stderr,
                   "xpr: XPR_NUM_THREADS='%s' is not a positive number; using one thread per "
                   "CPU\n",
                   s);
    }
    cpu_set_t set;
    if (::sched_getaffinity(0, sizeof set, &set) == 0)
      return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
    return std::max(1U, std::thread::hardware_concurrency());
  }();
  return threads;
}

XPR_FUNC void run_in_parts(RangeFn body, void* const* b, const long long* n, const Host* h,
                           long long count) {
  Workers::instance().run(body, b, n, h, count);
}

XPR_FUNC std::size_t parts_runs() { return jit_threads() > 1 ? Workers::instance().runs() : 0; }

}  // namespace xpr::codegen::detail
#endif  // XPR_DEFINITIONS
