// Ctrl-C for long kernels, in one place: run_interruptible runs a kernel with the GIL
// released on a helper thread while the calling thread wakes every kSignalPoll, takes
// the GIL for a moment and runs Python's signal handlers. When one raises (Ctrl-C gives
// KeyboardInterrupt) it sets the kernel's cancel flag (parallel.hpp), waits for the
// workers to stop at their next block boundary and raises that Python exception.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <new>
#include <optional>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

#include "truescore/parallel.hpp"

namespace truescore::bindings {

namespace py = pybind11;

inline constexpr std::chrono::milliseconds kSignalPoll{50};

// Work (element steps) above which a call is worth the helper thread (~30 us to start):
// roughly 10 ms of kernel time. Below it the kernel runs on the calling thread, still
// without the GIL, and cannot be interrupted (it ends first anyway).
inline constexpr double kInterruptibleWork = 1e7;

// run_interruptible for a kernel returning a value.
template <class Kernel>
auto run_interruptible_value(double work, Kernel kernel) -> decltype(kernel()) {
    using Result = decltype(kernel());
    if (work < kInterruptibleWork) {
        py::gil_scoped_release release;
        return kernel();
    }
    std::atomic<bool> cancel{false};
    std::optional<Result> result;
    std::exception_ptr error;
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false;
    bool interrupted = false;
    {
        py::gil_scoped_release release;
        auto task = [&] {
            try {
                CancelScope scope(&cancel);
                result.emplace(kernel());
            } catch (...) {
                error = std::current_exception();
            }
            std::lock_guard<std::mutex> lock(mutex);
            done = true;
            finished.notify_one();
        };
        std::thread helper;
        try {
            helper = std::thread(task);
        } catch (const std::system_error&) {
            task();  // no thread to spare: run here, uninterruptible, rather than fail
        } catch (const std::bad_alloc&) {
            task();
        }
        std::unique_lock<std::mutex> lock(mutex);
        while (!finished.wait_for(lock, kSignalPoll, [&] { return done; })) {
            lock.unlock();
            {
                py::gil_scoped_acquire acquire;
                // The handler's exception stays set on this thread until raised below.
                interrupted = PyErr_CheckSignals() != 0;
            }
            lock.lock();
            if (interrupted) {
                cancel.store(true, std::memory_order_relaxed);
                finished.wait(lock, [&] { return done; });
            }
        }
        lock.unlock();
        if (helper.joinable()) helper.join();
    }
    if (interrupted) throw py::error_already_set();
    if (error) std::rethrow_exception(error);
    return std::move(*result);
}

// kernel() with the GIL released, returning its result (kernels that write their output
// through pointers may return void); interruptible by Ctrl-C when `work` (element steps,
// an estimate) is at least kInterruptibleWork. Must be called with the GIL held.
template <class Kernel>
auto run_interruptible(double work, Kernel kernel) -> decltype(kernel()) {
    using Result = decltype(kernel());
    if constexpr (std::is_void_v<Result>) {
        run_interruptible(work, [&] {
            kernel();
            return true;
        });
        return;
    } else {
        return run_interruptible_value(work, kernel);
    }
}

}  // namespace truescore::bindings
