// The Python side of truescore::ArgumentError (truescore/errors.hpp): the classes of
// truescore_fast.errors, fetched once when _core loads (that module imports nothing of
// the package, so there is no loop), and the translator that raises them.
#pragma once

#include <pybind11/pybind11.h>

#include "truescore/errors.hpp"

namespace truescore::bindings {

// Fetch the classes and register the translator: C++'s ArgumentError raises
// truescore_fast.ArgumentError (a ValueError) with .argument set, its SizeError
// truescore_fast.SizeError (a MemoryError too).
void register_argument_errors(pybind11::module_& m);

// The Python error for `error`: an instance of the class above, not yet raised.
pybind11::object python_error(const ArgumentError& error);

}  // namespace truescore::bindings
