// Testing hooks for truescore/portable.hpp: each operation by the compiler's native branch
// and by the plain C++ fallback, so tests can check the fallback (the branch an unknown
// compiler takes) against the native one on every input they like.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "arrays.hpp"
#include "truescore/errors.hpp"
#include "truescore/portable.hpp"

namespace py = pybind11;

namespace {

// the array policy (arrays.hpp): a misaligned view is copied, never read as uint64_t*
using ArrayU64 = py::array_t<std::uint64_t, truescore::bindings::kInput>;

void same_length(const ArrayU64& a, const ArrayU64& b, const char* names) {
    if (a.ndim() != 1 || b.ndim() != 1 || a.size() != b.size())
        throw truescore::argument_error(names, " must be 1-D of one length");
}

// (hi, lo) of a[i] * b[i].
py::tuple mul_wide(const ArrayU64& a, const ArrayU64& b, bool portable) {
    same_length(a, b, "a and b");
    const std::size_t n = static_cast<std::size_t>(a.size());
    ArrayU64 hi(static_cast<py::ssize_t>(n)), lo(static_cast<py::ssize_t>(n));
    const std::uint64_t *pa = a.data(), *pb = b.data();
    std::uint64_t *ph = hi.mutable_data(), *pl = lo.mutable_data();
    for (std::size_t i = 0; i < n; ++i)
        ph[i] = portable ? truescore::mul_wide_u64_portable(pa[i], pb[i], pl + i)
                         : truescore::mul_wide_u64(pa[i], pb[i], pl + i);
    return py::make_tuple(hi, lo);
}

// (quotient, remainder) of (hi[i] * 2^64 + lo[i]) / d[i]; needs hi[i] < d[i].
py::tuple div_wide(const ArrayU64& hi, const ArrayU64& lo, const ArrayU64& d, bool portable) {
    same_length(hi, lo, "hi and lo");
    same_length(hi, d, "hi and d");
    const std::size_t n = static_cast<std::size_t>(hi.size());
    const std::uint64_t *ph = hi.data(), *pl = lo.data(), *pd = d.data();
    for (std::size_t i = 0; i < n; ++i)
        if (ph[i] >= pd[i]) throw truescore::argument_error("d", " must exceed hi (the quotient must fit in 64 bits)");
    ArrayU64 q(static_cast<py::ssize_t>(n)), r(static_cast<py::ssize_t>(n));
    std::uint64_t *pq = q.mutable_data(), *pr = r.mutable_data();
    for (std::size_t i = 0; i < n; ++i)
        pq[i] = portable ? truescore::div_wide_u64_portable(ph[i], pl[i], pd[i], pr + i)
                         : truescore::div_wide_u64(ph[i], pl[i], pd[i], pr + i);
    return py::make_tuple(q, r);
}

// popcount64 (bits 64) or popcount32 of the low 32 bits (bits 32) of each x[i].
py::array_t<std::int64_t> popcount(const ArrayU64& x, int bits, bool portable) {
    if (bits != 32 && bits != 64) throw truescore::argument_error("bits", " must be 32 or 64");
    const std::size_t n = static_cast<std::size_t>(x.size());
    py::array_t<std::int64_t> out(static_cast<py::ssize_t>(n));
    const std::uint64_t* px = x.data();
    std::int64_t* po = out.mutable_data();
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t v = bits == 32 ? px[i] & 0xFFFFFFFFu : px[i];
        po[i] = portable ? truescore::popcount64_portable(v)
                : bits == 32 ? truescore::popcount32(static_cast<std::uint32_t>(v))
                             : truescore::popcount64(v);
    }
    return out;
}

py::dict features(const truescore::CpuFeatures& f) {
    py::dict d;
    d["popcnt"] = f.popcnt;
    d["avx"] = f.avx;
    d["avx2"] = f.avx2;
    d["avx512f"] = f.avx512f;
    return d;
}

}  // namespace

void bind_portable_testing(py::module_& t) {
    t.def("mul_wide", &mul_wide, py::arg("a"), py::arg("b"), py::arg("portable"),
          "(hi, lo) words of a * b (uint64 arrays) by the native branch or the plain C++ fallback.");
    t.def("div_wide", &div_wide, py::arg("hi"), py::arg("lo"), py::arg("d"), py::arg("portable"),
          "(quotient, remainder) of (hi * 2**64 + lo) / d (hi < d) by the native branch or the fallback.");
    t.def("popcount", &popcount, py::arg("x"), py::arg("bits"), py::arg("portable"),
          "Set bits of each word (bits=64) or of its low 32 bits (bits=32), native or fallback.");
    t.def(
        "cpu_features",
        [](bool from_cpuid) {
            return features(from_cpuid ? truescore::cpu_features_cpuid() : truescore::cpu_features());
        },
        py::arg("from_cpuid"),
        "The vector features the kernels see (from_cpuid=False) or read from CPUID/XGETBV by "
        "the code MSVC builds use (True; no features off x86).");
    t.def(
        "decode_cpuid",
        [](std::uint32_t max_leaf, std::uint32_t leaf1_ecx, std::uint32_t leaf7_ebx, std::uint64_t xcr0) {
            return features(truescore::decode_cpuid(max_leaf, leaf1_ecx, leaf7_ebx, xcr0));
        },
        py::arg("max_leaf"), py::arg("leaf1_ecx"), py::arg("leaf7_ebx"), py::arg("xcr0"),
        "The features given CPUID leaf 0 EAX, leaf 1 ECX, leaf 7 EBX and XCR0.");
    t.def(
        "has_cpuid", [] {
#ifdef TRUESCORE_HAVE_CPUID
            return true;
#else
            return false;
#endif
        },
        "Whether cpu_features(from_cpuid=True) reads the registers on this build (x86).");
}
