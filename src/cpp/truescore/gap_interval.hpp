// The result every interval for the mean gap returns, in its own header: the intervals
// (intervals.hpp) call the betting interval (betting.hpp), and both return this, so
// neither header needs the other's (tests/package/test_cpp_layering.py keeps the
// include graph free of cycles).
#pragma once

namespace truescore {

// An interval for the mean gap on the d scale. low/high are clipped to [-1, 1];
// half_width is the method's own half-width before clipping ((high - low) / 2 for betting).
struct GapInterval {
    double low;
    double high;
    double estimate;
    double half_width;
};

}  // namespace truescore
