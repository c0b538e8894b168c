// Stopping a long native call on Ctrl-C (or any signal whose Python handler raises). Plain C++: no Python.
//
// The binding that runs a kernel with the GIL released (bind::run_released in common/bind.h) opens an
// InterruptScope on its thread for the duration of the call: a hook (there: re-acquire the GIL, run
// Python's signal handlers, PyErr_CheckSignals) and one stop flag per call. Kernels ask
// interrupt_requested() at coarse points (once per CG iteration, per rank test, per SCC ...): on the
// calling thread it runs the hook at most every kInterruptPeriod (a clock read otherwise) and raises the
// flag when the hook reports an interrupt; on any thread that joined the call (InterruptJoin, inside an
// OpenMP region) it reads the flag. A kernel that sees it stops where it is, leaves its outputs to be
// discarded and returns Status::interrupted() (or throws it as a StatusError, outside OpenMP regions): the
// binding then raises the pending Python exception (KeyboardInterrupt). Without a scope (plain C++ callers,
// OpenMP workers that did not join) interrupt_requested() is false and costs one thread-local read.
#pragma once
#include <atomic>
#include <chrono>

#include "common/status.h"

namespace fastnips {

// Whether the user asked to stop; called with nothing locked, at most every kInterruptPeriod.
using InterruptHook = bool (*)();

// The longest a kernel runs between two polls of the hook (plus the time of one unit of its work).
constexpr std::chrono::milliseconds kInterruptPeriod{20};

namespace detail {
struct InterruptState {
  InterruptHook hook = nullptr;
  std::atomic<bool>* stop = nullptr;  // the flag of the call this thread works for
  std::chrono::steady_clock::time_point next{};
};
inline InterruptState& interrupt_state() {
  thread_local InterruptState s;
  return s;
}
}  // namespace detail

// True once the call this thread works for was interrupted (see above). Sticky for the rest of the call.
inline bool interrupt_requested() {
  auto& s = detail::interrupt_state();
  if (s.stop == nullptr) return false;
  if (s.stop->load(std::memory_order_relaxed)) return true;
  if (s.hook == nullptr) return false;
  const auto now = std::chrono::steady_clock::now();
  if (now < s.next) return false;
  s.next = now + kInterruptPeriod;
  if (!s.hook()) return false;
  s.stop->store(true, std::memory_order_relaxed);
  return true;
}

// Throws StatusError(Status::interrupted()) when interrupt_requested(); never inside an OpenMP region.
inline void check_interrupt() {
  if (interrupt_requested()) throw StatusError(Status::interrupted());
}

// The call's scope on the thread that runs it: installs `hook` and the call's flag, restores the previous
// ones on exit (scopes nest).
class InterruptScope {
 public:
  InterruptScope(InterruptHook hook, std::atomic<bool>* stop) : saved_(detail::interrupt_state()) {
    auto& s = detail::interrupt_state();
    s.hook = hook;
    s.stop = stop;
    // the first poll after one period: a call shorter than that never takes the GIL back (which could wait
    // for another Python thread's switch interval)
    s.next = hook ? std::chrono::steady_clock::now() + kInterruptPeriod : std::chrono::steady_clock::time_point{};
  }
  ~InterruptScope() {
    auto& s = detail::interrupt_state();
    s.hook = saved_.hook;
    s.stop = saved_.stop;
    s.next = saved_.next;
  }
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  detail::InterruptState saved_;
};

// The flag of the current call, taken before an OpenMP region and joined by every thread inside it, so that
// workers see the interrupt the calling thread polled:
//     const InterruptShare share;
//     #pragma omp parallel
//     { const InterruptJoin join(share); ... if (interrupt_requested()) break; ... }
//     check_interrupt();  // after the region, on the calling thread
struct InterruptShare {
  std::atomic<bool>* stop = detail::interrupt_state().stop;
};

class InterruptJoin {
 public:
  explicit InterruptJoin(const InterruptShare& share) : saved_(detail::interrupt_state().stop) {
    auto& s = detail::interrupt_state();
    if (s.stop == nullptr) s.stop = share.stop;  // the calling thread keeps its own (with the hook)
  }
  ~InterruptJoin() { detail::interrupt_state().stop = saved_; }
  InterruptJoin(const InterruptJoin&) = delete;
  InterruptJoin& operator=(const InterruptJoin&) = delete;

 private:
  std::atomic<bool>* saved_;
};

}  // namespace fastnips
