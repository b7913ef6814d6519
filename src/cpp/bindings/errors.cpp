#include "errors.hpp"

#include <cstdint>
#include <optional>
#include <string>

#include <pybind11/stl.h>

#include "truescore/memory.hpp"

namespace py = pybind11;

namespace truescore::bindings {

namespace {

// Held for the life of the process (never released: a static py::object would be
// destroyed after the interpreter at exit).
PyObject* argument_error_class = nullptr;
PyObject* size_error_class = nullptr;

}  // namespace

py::object python_error(const ArgumentError& error) {
    const bool size = dynamic_cast<const SizeError*>(&error) != nullptr;
    const py::handle cls(size ? size_error_class : argument_error_class);
    py::object template_text = py::none();
    if (!error.message_template().empty()) template_text = py::str(error.message_template());
    return cls(error.argument(), error.what(), py::arg("template") = template_text);
}

void register_argument_errors(py::module_& m) {
    const py::module_ errors = py::module_::import("truescore_fast.errors");
    argument_error_class = py::object(errors.attr("ArgumentError")).release().ptr();
    size_error_class = py::object(errors.attr("SizeError")).release().ptr();
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const ArgumentError& e) {
            try {
                const py::object error = python_error(e);
                // raised with its own type: set as a plain ValueError, pybind11 would see
                // the type change when it normalises the error
                PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
            } catch (py::error_already_set& failed) {  // the class could not be called
                failed.restore();
            }
        }
    });

    m.def(
        "memory_limit",
        [](const std::string& meminfo, const std::string& self_cgroup, const std::string& cgroup_root,
           bool address_space) -> std::optional<std::int64_t> {
            const std::int64_t limit = truescore::memory_limit({meminfo, self_cgroup, cgroup_root, address_space});
            if (limit == 0) return std::nullopt;
            return limit;
        },
        py::kw_only(), py::arg("meminfo") = "/proc/meminfo", py::arg("self_cgroup") = "/proc/self/cgroup",
        py::arg("cgroup_root") = "/sys/fs/cgroup", py::arg("address_space") = true,
        "Most bytes one allocation can hope to get now (memory.hpp), or None when no limit is "
        "known; the files it reads can be pointed elsewhere.");
    m.def("format_bytes", &truescore::format_bytes, py::arg("nbytes"),
          "Bytes for people: '512 bytes', '3.2 MB', '2,500.0 EB'.");
    m.def(
        "memory_error",
        [](const std::string& name, double nbytes, const std::optional<std::string>& advice,
           std::optional<std::int64_t> limit) {
            return python_error(truescore::size_error(name, nbytes, advice.value_or(""), limit.value_or(0)));
        },
        py::arg("name"), py::arg("nbytes"), py::arg("advice") = py::none(), py::arg("limit") = py::none(),
        "The SizeError for `name` needing `nbytes` when `limit` bytes (None: unknown) can be had "
        "(not raised); `advice` a template, argument names in braces.");
}

}  // namespace truescore::bindings
