#include "truescore/memory.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/resource.h>
#include <unistd.h>
#endif

namespace truescore {

namespace {

// The whole file as one integer (surrounding blanks allowed); nothing for a file that is
// missing or holds anything else (cgroup v2 writes "max" for no limit).
std::optional<std::int64_t> read_int(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return std::nullopt;
    const std::string digits = text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(digits.c_str(), &end, 10);
    if (end == digits.c_str() || *end != '\0' || errno == ERANGE) return std::nullopt;
    return static_cast<std::int64_t>(v);
}

std::optional<std::int64_t> available(const std::string& meminfo) {
    std::ifstream in(meminfo);
    std::string line;
    while (in && std::getline(in, line)) {
        if (line.rfind("MemAvailable:", 0) != 0) continue;
        std::istringstream fields(line.substr(13));
        long long kb = 0;
        if (fields >> kb) return static_cast<std::int64_t>(kb) * 1024;
        break;
    }
#if defined(_SC_PAGE_SIZE) && defined(_SC_PHYS_PAGES)
    const long page = sysconf(_SC_PAGE_SIZE), pages = sysconf(_SC_PHYS_PAGES);
    if (page > 0 && pages > 0) return static_cast<std::int64_t>(page) * pages;
#endif
    return std::nullopt;
}

// What each cgroup limit found still allows (its limit less its use): the root folder's
// (inside a container, the container's own) and the process's own cgroup, as
// /proc/self/cgroup names it (v2 "0::/path"; v1 "N:memory,...:/path").
std::vector<std::int64_t> cgroup_room(const MemorySources& s) {
    std::vector<std::string> folders{s.cgroup_root};
    std::ifstream self(s.self_cgroup);
    std::string line;
    while (self && std::getline(self, line)) {
        const auto a = line.find(':');
        const auto b = a == std::string::npos ? a : line.find(':', a + 1);
        if (b == std::string::npos) continue;
        std::string path = line.substr(b + 1);
        while (!path.empty() && std::isspace(static_cast<unsigned char>(path.back()))) path.pop_back();
        if (path.empty() || path == "/") continue;
        bool memory = line.compare(0, a, "0") == 0;
        std::istringstream names(line.substr(a + 1, b - a - 1));
        for (std::string name; std::getline(names, name, ',');) memory = memory || name == "memory";
        if (memory) {
            folders.push_back(s.cgroup_root + path);
            folders.push_back(s.cgroup_root + "/memory" + path);
        }
    }
    static const char* const files[][2] = {{"memory.max", "memory.current"},
                                           {"memory.limit_in_bytes", "memory.usage_in_bytes"},
                                           {"memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes"}};
    std::vector<std::int64_t> room;
    std::vector<std::string> seen;
    for (const std::string& folder : folders) {
        if (std::find(seen.begin(), seen.end(), folder) != seen.end()) continue;
        seen.push_back(folder);
        for (const auto& f : files) {
            const auto limit = read_int(folder + "/" + f[0]);
            if (limit && *limit < (std::int64_t{1} << 60))  // v1 writes "no limit" as about 2**63
                room.push_back(*limit - read_int(folder + "/" + f[1]).value_or(0));
        }
    }
    return room;
}

std::optional<std::int64_t> address_space() {
#if defined(__unix__) || defined(__APPLE__)
    rlimit r{};
    if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return std::nullopt;
    return static_cast<std::int64_t>(std::min<rlim_t>(r.rlim_cur, std::numeric_limits<std::int64_t>::max()));
#else
    return std::nullopt;
#endif
}

// `x` with one decimal ("999.9"), and with commas between thousands ("2,500.0") as
// Python's ",.1f" when `commas`.
std::string one_decimal(double x, bool commas = true) {
    char buffer[512];
    std::snprintf(buffer, sizeof buffer, "%.1f", x);
    std::string text = buffer;
    const std::size_t start = text[0] == '-' ? 1 : 0;
    const auto dot = text.find('.');
    if (dot == std::string::npos || !commas) return text;  // inf, nan
    for (std::size_t at = dot; at > start + 3; at -= 3) text.insert(at - 3, ",");
    return text;
}

bool is_name(const std::string& word) {
    if (word.empty() || !(std::isalpha(static_cast<unsigned char>(word[0])) || word[0] == '_')) return false;
    return std::all_of(word.begin(), word.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// `text` inside a template: its braces doubled.
std::string literal(const std::string& text) {
    std::string out;
    for (const char c : text) {
        out += c;
        if (c == '{' || c == '}') out += c;
    }
    return out;
}

// The message a template stands for: each "{name}" as the name, "{{" and "}}" as braces.
std::string filled(const std::string& t) {
    std::string out;
    for (std::size_t i = 0; i < t.size(); ++i) {
        if ((t[i] == '{' || t[i] == '}') && i + 1 < t.size() && t[i + 1] == t[i]) {
            out += t[i++];
        } else if (t[i] != '{' && t[i] != '}') {
            out += t[i];
        }
    }
    return out;
}

}  // namespace

std::int64_t memory_limit(const MemorySources& sources) {
    std::optional<std::int64_t> least = available(sources.meminfo);
    const auto take = [&least](std::int64_t v) { least = least ? std::min(*least, v) : v; };
    for (const std::int64_t v : cgroup_room(sources)) take(v);
    if (sources.address_space)
        if (const auto as = address_space()) take(*as);
    return least ? std::max<std::int64_t>(1, *least) : 0;
}

std::string format_bytes(double nbytes) {
    if (nbytes < 1e3) return std::to_string(static_cast<long long>(std::max(nbytes, 0.0))) + " bytes";
    static const std::pair<const char*, double> units[] = {
        {"EB", 1e18}, {"PB", 1e15}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}};
    for (const auto& [unit, size] : units)
        if (nbytes >= size) return one_decimal(nbytes / size) + " " + unit;
    return one_decimal(nbytes / 1e3, false) + " kB";  // below 1e6: as Python's ".1f"
}

SizeError size_error(const std::string& name, double nbytes, const std::string& advice, std::int64_t limit) {
    // each argument of the name a template field ("a x b": both), anything else as it is
    std::string shown, argument;
    for (std::size_t start = 0;;) {
        const auto cut = name.find(" x ", start);
        const std::string word = name.substr(start, cut == std::string::npos ? cut : cut - start);
        if (argument.empty()) argument = word;
        shown += is_name(word) ? "{" + word + "}" : literal(word);
        if (cut == std::string::npos) break;
        shown += " x ";
        start = cut + 3;
    }
    const std::string have =
        limit > 0 ? "more than the " + format_bytes(static_cast<double>(limit)) + " available" : "more than can be had";
    const std::string text = shown + " needs " + format_bytes(nbytes) + " of memory, " + have + "; " +
                             (advice.empty() ? "use a smaller " + shown : advice);
    return SizeError(argument, filled(text), text);
}

}  // namespace truescore
