// The CPUs this process may actually use: the default thread count (parallel.hpp).
//
// std::thread::hardware_concurrency() counts the machine's CPUs, which a process often
// may not all use: `taskset -c 0` or a batch scheduler's CPU set (the affinity mask), or
// a container's CPU quota (cgroup v2 cpu.max "quota period", cgroup v1 cfs_quota_us /
// cfs_period_us), where more threads than the quota only take turns. The budget is the
// smallest of the machine's CPUs, the affinity mask's and the quota rounded up
// (a quota of 1.5 CPUs gives 2), and at least 1. On systems without these (not Linux) it
// is hardware_concurrency().
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

namespace truescore {

namespace cpu_budget_detail {

// ceil(quota / period) from cgroup v2's cpu.max line ("max 100000" means no quota);
// A quota in CPUs as a whole count (rounded up); 0 (none) when it is not a finite number
// (inf, NaN: converting those to long is undefined), capped far above any machine.
inline long whole_cpus(double cpus) {
    if (!std::isfinite(cpus)) return 0;
    return static_cast<long>(std::min(std::ceil(cpus), 65536.0));
}

// 0 when there is no quota or the file is unreadable.
inline long quota_v2(const std::string& path) {
    std::ifstream in(path);
    std::string quota;
    double period = 0;
    if (!(in >> quota >> period) || quota == "max" || !(period > 0)) return 0;
    char* end = nullptr;
    const double q = std::strtod(quota.c_str(), &end);
    if (end == quota.c_str() || *end != '\0' || !(q > 0)) return 0;  // "100000abc": none
    return whole_cpus(q / period);
}

// The same from cgroup v1's cpu.cfs_quota_us (-1: no quota) and cpu.cfs_period_us.
inline long quota_v1(const std::string& dir) {
    std::ifstream q_in(dir + "/cpu.cfs_quota_us"), p_in(dir + "/cpu.cfs_period_us");
    double q = 0, p = 0;
    if (!(q_in >> q) || !(p_in >> p) || !(q > 0) || !(p > 0)) return 0;
    return whole_cpus(q / p);
}

// The smallest quota on the way from this process's cgroup (as `proc_cgroup`, the format
// of /proc/self/cgroup, names it) up to the root (a parent's quota binds its children
// too), and at the root of the mounted hierarchy itself (inside a container it is the
// container's own cgroup), under `root` (/sys/fs/cgroup: cgroup v2 there, or in
// root/unified on a hybrid system; v1's cpu controller in root/cpu); 0 when none applies.
inline long cgroup_quota(const std::string& proc_cgroup = "/proc/self/cgroup",
                         const std::string& sys_root = "/sys/fs/cgroup") {
    long best = 0;
    const auto take = [&best](long q) {
        if (q > 0 && (best == 0 || q < best)) best = q;
    };
    std::ifstream self(proc_cgroup);
    std::string line;
    while (std::getline(self, line)) {
        // v2: "0::/path"; v1: "N:cpu,cpuacct:/path" (or "cpuacct,cpu").
        const auto first = line.find(':');
        const auto second = first == std::string::npos ? first : line.find(':', first + 1);
        if (second == std::string::npos) continue;
        const std::string controllers = line.substr(first + 1, second - first - 1);
        std::string path = line.substr(second + 1);
        const bool v2 = line.compare(0, first, "0") == 0 && controllers.empty();
        std::vector<std::string> roots;
        if (v2) {
            roots = {sys_root, sys_root + "/unified"};
        } else {
            std::stringstream names(controllers);
            std::string name;
            bool cpu = false;
            while (std::getline(names, name, ',')) cpu = cpu || name == "cpu";
            if (!cpu) continue;
            roots = {sys_root + "/cpu", sys_root + "/cpu,cpuacct", sys_root + "/cpuacct,cpu"};
        }
        for (const std::string& root : roots) {
            for (std::string at = path;;) {
                const std::string dir = root + (at == "/" ? "" : at);
                take(v2 ? quota_v2(dir + "/cpu.max") : quota_v1(dir));
                if (at.empty() || at == "/") break;
                const auto slash = at.find_last_of('/');
                at = slash == 0 || slash == std::string::npos ? "/" : at.substr(0, slash);
            }
        }
    }
    take(quota_v2(sys_root + "/cpu.max"));  // a container's namespace root
    return best;
}

}  // namespace cpu_budget_detail

// CPUs this process may use (at least 1); read afresh on each call (a system call and a
// few small files: callers that need it often cache it).
inline int cpu_budget() {
    const unsigned hw = std::thread::hardware_concurrency();
    long cpus = hw == 0 ? 1 : static_cast<long>(hw);
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        const int allowed = CPU_COUNT(&set);
        // A machine with more CPUs than a cpu_set_t holds (1024) reports an error instead;
        // then the affinity mask is not consulted.
        if (allowed > 0) cpus = std::min<long>(cpus, allowed);
    }
    const long quota = cpu_budget_detail::cgroup_quota();
    if (quota > 0) cpus = std::min(cpus, quota);
#endif
    return static_cast<int>(std::clamp<long>(cpus, 1, 1L << 16));
}

}  // namespace truescore
