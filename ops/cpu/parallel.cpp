// The CPU kernels' thread pool (declared in ops/cpu/loops.h). Why not an OpenMP parallel region:
// a region ends in a barrier that waits for every team thread to arrive, so when the other core is
// busy (a data-loader worker, a compiler, another process) each region waits for the worker thread
// to be scheduled at all, and a training step of ~40 regions went from 11 ms on one thread to
// 135 ms on two (bench/README.md). Here the caller never waits for a worker to arrive:
//   - a job is a number of chunks in one contiguous range per thread; the caller and any worker
//     that joins claim chunks from their own range first, then from the others', through atomic
//     counters, so a late worker finds nothing left and the caller has run the job alone. On time,
//     the caller runs the first part of a tensor in every job of a step and, with two threads, the
//     worker the rest (with more, workers take the other ranges in the order they arrive), so data
//     stays in the cache of the core that wrote it: with chunks claimed from one shared counter,
//     an MLP step's SGD update took 2.7x longer on two threads than on one (bench/README.md,
//     performance log 24);
//   - the caller waits only for chunks a worker has claimed and is running;
//   - idle workers spin for a short while (back-to-back kernels of a step stay hot), then sleep on
//     a futex (std::atomic::wait), so an idle pool costs nothing to the data loader's threads.
// One job at a time: a second thread calling in while a job runs (a data-loader worker running a
// transform) runs its loop serially. Exceptions thrown by a chunk reach the caller.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

#include "ops/cpu/loops.h"

namespace minidl::kernels::cpu {

namespace {
thread_local bool t_in_task = false;  // a pool worker, or a caller running its chunks

// How long an idle worker spins before sleeping (MINIDL_SPIN_US overrides; 0 sleeps at once).
int64_t spin_ns() {
  static const int64_t ns = [] {
    const char* v = std::getenv("MINIDL_SPIN_US");
    return v ? std::max<int64_t>(0, std::atoll(v)) * 1000 : int64_t{100} * 1000;
  }();
  return ns;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Job {
  // One range of chunks per thread, each claimed from its own counter (on its own cache line).
  static constexpr int kMaxRanges = 64;
  struct alignas(64) Range {
    std::atomic<int64_t> next{0};
    int64_t end = 0;
  };

  Job(void (*call_in)(void*, int64_t), void* ctx_in, int64_t chunks, int threads) : call(call_in), ctx(ctx_in) {
    ranges = std::min(std::max(threads, 1), kMaxRanges);
    for (int r = 0; r < ranges; ++r) {
      range[r].next.store(chunks * r / ranges, std::memory_order_relaxed);
      range[r].end = chunks * (r + 1) / ranges;
    }
  }
  void (*call)(void*, int64_t);
  void* ctx;
  int ranges = 1;
  Range range[kMaxRanges];
  std::atomic<int> helpers{0};  // workers still allowed to join (threads - 1 in all)
  std::atomic<bool> failed{false};
  std::exception_ptr error;

  // Participant `self` (0: the caller; each joining worker a distinct 1..threads-1) claims and runs chunks
  // of its own range, then of the others', until none is left; the first exception stops
  // everyone's claiming.
  void work(int self) {
    for (int i = 0; i < ranges; ++i) {
      Range& r = range[(self + i) % ranges];
      for (int64_t c; !failed.load(std::memory_order_relaxed) && (c = r.next.fetch_add(1)) < r.end;) {
        try {
          call(ctx, c);
        } catch (...) {
          if (!failed.exchange(true)) error = std::current_exception();
        }
      }
    }
  }
};

class Pool {
 public:
  void run(int64_t chunks, int threads, void (*call)(void*, int64_t), void* ctx) {
    if (threads - 1 > workers_.load()) grow(threads - 1);
    Job job(call, ctx, chunks, threads);
    job.helpers.store(threads - 1);
    Job* expected = nullptr;
    if (threads <= 1 || !job_.compare_exchange_strong(expected, &job)) {  // busy: another caller's job
      serial(job);
      return;
    }
    gen_.fetch_add(1);
    if (sleepers_.load() > 0) gen_.notify_all();
    t_in_task = true;
    job.work(0);
    t_in_task = false;
    // Close the job, then wait for workers inside it. A worker announces itself (active_) before
    // it reads job_, and the caller clears job_ before it reads active_: one sees the other.
    job_.store(nullptr);
    for (int spins = 0; active_.load() != 0; ++spins) {
      if (spins < 2000) _mm_pause();
      else std::this_thread::yield();
    }
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  static void serial(Job& job) {
    const bool outer = t_in_task;
    t_in_task = true;
    job.work(0);
    t_in_task = outer;
    if (job.error) std::rethrow_exception(job.error);
  }

  // Called before the job that needs the workers is published: a new worker starts from the
  // generation before it, so it joins that job however late it starts.
  void grow(int n) {
    std::lock_guard<std::mutex> lock(grow_mutex_);
    const uint32_t before = gen_.load();
    for (; workers_.load() < n; workers_.fetch_add(1))
      std::thread([this, before] { worker(before); }).detach();  // the pool lives until exit (never destroyed)
  }

  void worker(uint32_t seen) {
    t_in_task = true;
    for (;;) {
      // Wait for a new job: spin, then sleep.
      const int64_t deadline = now_ns() + spin_ns();
      for (int i = 0; gen_.load(std::memory_order_acquire) == seen; ++i) {
        if ((i & 63) == 0 && now_ns() > deadline) {
          sleepers_.fetch_add(1);
          gen_.wait(seen);
          sleepers_.fetch_sub(1);
        } else {
          _mm_pause();
        }
      }
      seen = gen_.load();
      active_.fetch_add(1);
      Job* job = job_.load();
      if (job)
        if (const int self = job->helpers.fetch_sub(1); self > 0) job->work(self);
      active_.fetch_sub(1);
    }
  }

  std::atomic<int> workers_{0};
  std::mutex grow_mutex_;
  std::atomic<Job*> job_{nullptr};
  std::atomic<uint32_t> gen_{0};
  std::atomic<int> active_{0};
  std::atomic<int> sleepers_{0};
};

Pool& pool() {
  static Pool* p = new Pool();  // never destroyed: workers may still be waiting at exit
  return *p;
}
}  // namespace

int max_threads() { return std::max(1, omp_get_max_threads()); }

bool in_parallel() { return t_in_task || omp_in_parallel(); }

void run_chunks(int64_t chunks, void (*call)(void*, int64_t), void* ctx) {
  if (chunks <= 0) return;
  const int threads = static_cast<int>(std::min<int64_t>(max_threads(), chunks));
  if (threads <= 1 || in_parallel()) {
    for (int64_t c = 0; c < chunks; ++c) call(ctx, c);
    return;
  }
  pool().run(chunks, threads, call, ctx);
}

}  // namespace minidl::kernels::cpu
