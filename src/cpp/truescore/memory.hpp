// How much memory one allocation can hope to get, and the error for an argument that asks
// for more: the one implementation, for the bindings' checks (bindings/checks.hpp) and for
// Python's (truescore_fast._validation calls _core.memory_limit and _core.memory_error),
// so both read the same limit and write the same message.
#pragma once

#include <cstdint>
#include <string>

#include "truescore/errors.hpp"

namespace truescore {

// Where the limit is read (a test points them at files of its own).
struct MemorySources {
    std::string meminfo = "/proc/meminfo";
    std::string self_cgroup = "/proc/self/cgroup";
    std::string cgroup_root = "/sys/fs/cgroup";
    bool address_space = true;  // consult the address-space limit (ulimit -v)
};

// Most bytes one allocation can hope to get now: the machine's available memory (Linux's
// MemAvailable, not its total; the physical memory without it), or less when a cgroup's
// limit less its use (v2 memory.max - memory.current; v1 memory.limit_in_bytes -
// memory.usage_in_bytes; the process's own cgroup and the root one, a container's own) or
// the address-space limit is lower; at least 1 (a cgroup already at its limit); 0 when no
// limit is known.
std::int64_t memory_limit(const MemorySources& sources = {});

// Bytes for people: "512 bytes", "3.2 MB", "24.0 GB", "2,500.0 EB" (powers of 1000).
std::string format_bytes(double nbytes);

// The error for `name` needing `nbytes` when `limit` bytes (0: unknown) can be had:
// "<name> needs 24.0 GB of memory, more than the 10.2 GB available; <advice>", the advice
// "use a smaller <name>" unless given. `name` is the argument (or "a x b", a product of
// two; or a file, which is no argument name); `advice` is a template, argument names in
// braces ("use fewer {n_shards}"), so the command line can write them as its flags.
SizeError size_error(const std::string& name, double nbytes, const std::string& advice, std::int64_t limit);

}  // namespace truescore
