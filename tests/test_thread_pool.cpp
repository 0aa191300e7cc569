// The CPU kernels' thread pool (ops/cpu/parallel.cpp, parallel_chunks in ops/cpu/loops.h): every
// chunk runs exactly once for any chunk and thread count, a thread that finishes its own range
// takes the chunks left in another's, the caller runs the first range itself, exceptions reach the
// caller, and a job started inside a chunk runs on its caller's thread.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ops/cpu/loops.h"
#include "thread_count.h"

using namespace minidl;
using kernels::cpu::parallel_chunks;
using minidl::testing::ThreadCount;

TEST_CASE("thread pool: every chunk runs exactly once, for any chunk and thread count", "[parallel]") {
  for (int threads : {1, 2, 3, 4})
    for (int64_t chunks : {1, 2, 3, 7, 64, 65, 1000}) {
      INFO(threads << " threads, " << chunks << " chunks");
      ThreadCount count(threads);
      std::vector<std::atomic<int>> runs(static_cast<size_t>(chunks));
      for (int rep = 0; rep < 3; ++rep) parallel_chunks(chunks, [&](int64_t c) { runs[static_cast<size_t>(c)].fetch_add(1); });
      int64_t wrong = 0;
      for (const auto& r : runs) wrong += r.load() != 3;
      CHECK(wrong == 0);
    }
}

namespace {
// Eight chunks on two threads (the caller sets them), where a chunk first waits (10 s at most)
// until every chunk that waits_for(chunk, on_caller) names has started. Which thread ran each
// chunk, or a default id for a chunk that never ran.
std::vector<std::thread::id> run_eight_holding(const std::function<std::vector<int>(int64_t, bool)>& waits_for) {
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::atomic<bool>> started(8);
  std::vector<std::thread::id> ran_on(8);
  parallel_chunks(8, [&](int64_t c) {
    started[static_cast<size_t>(c)] = true;
    ran_on[static_cast<size_t>(c)] = std::this_thread::get_id();
    const std::vector<int> until = waits_for(c, std::this_thread::get_id() == caller);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    auto all_started = [&] { return std::all_of(until.begin(), until.end(), [&](int u) { return started[static_cast<size_t>(u)].load(); }); };
    while (!all_started() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::microseconds(100));
  });
  return ran_on;
}
}  // namespace

TEST_CASE("thread pool: a thread done with its own range takes the chunks left in another's", "[parallel]") {
  // The caller's range is 0-3, the worker's 4-7. The worker's chunks wait until chunk 0 has
  // started (on the caller: the worker is held in its own range), and chunk 0 holds the caller
  // until chunks 1-3 have started, so those can only run on the worker, after its own range.
  ThreadCount two(2);
  const std::thread::id caller = std::this_thread::get_id();
  const auto ran_on = run_eight_holding([](int64_t c, bool) {
    if (c == 0) return std::vector<int>{1, 2, 3};
    return c >= 4 ? std::vector<int>{0} : std::vector<int>{};
  });
  CHECK(ran_on[0] == caller);
  for (int c = 1; c < 8; ++c) {
    INFO("chunk " << c);
    CHECK(ran_on[static_cast<size_t>(c)] != std::thread::id());
    CHECK(ran_on[static_cast<size_t>(c)] != caller);
  }
}

TEST_CASE("thread pool: the caller runs its own range, the first, before anything else", "[parallel]") {
  // A chunk on the worker (its own range first) waits until chunks 0-3 have started: with the
  // caller taking its range (0-3) in order, they all run on the caller, so the same part of each
  // tensor stays with the same core from one kernel to the next.
  ThreadCount two(2);
  const std::thread::id caller = std::this_thread::get_id();
  const auto ran_on = run_eight_holding([](int64_t, bool on_caller) { return on_caller ? std::vector<int>{} : std::vector<int>{0, 1, 2, 3}; });
  for (int c = 0; c < 4; ++c) {
    INFO("chunk " << c);
    CHECK(ran_on[static_cast<size_t>(c)] == caller);
  }
}

TEST_CASE("thread pool: an exception in a chunk reaches the caller; nested jobs run on the calling thread", "[parallel]") {
  ThreadCount two(2);
  CHECK_THROWS_WITH(parallel_chunks(100,
                                    [](int64_t c) {
                                      if (c == 37) throw std::runtime_error("chunk 37 failed");
                                    }),
                    "chunk 37 failed");
  // The pool still runs jobs afterwards.
  std::atomic<int64_t> sum{0};
  parallel_chunks(100, [&](int64_t c) { sum += c; });
  CHECK(sum == 4950);

  std::atomic<int> inner_runs{0}, inner_elsewhere{0};
  parallel_chunks(4, [&](int64_t) {
    const std::thread::id outer = std::this_thread::get_id();
    parallel_chunks(16, [&](int64_t) {
      inner_runs += 1;
      inner_elsewhere += std::this_thread::get_id() != outer;
    });
  });
  CHECK(inner_runs == 64);
  CHECK(inner_elsewhere == 0);
}
