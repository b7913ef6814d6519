// The error for a bad argument: a std::invalid_argument that carries the name of the
// argument it refuses, so the Python error can carry it too (the bindings turn it into
// truescore_fast.ArgumentError, bindings/errors.cpp) and no one has to read the name back
// out of the message. The message starts with the name ("alpha must lie in (0, 1)").
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace truescore {

class ArgumentError : public std::invalid_argument {
public:
    ArgumentError(std::string argument, const std::string& message, std::string message_template = {})
        : std::invalid_argument(message), argument_(std::move(argument)), template_(std::move(message_template)) {}

    // The argument's name, as the Python caller spells it.
    const std::string& argument() const noexcept { return argument_; }
    // The message with each argument name it gives in braces ("{n_bootstrap} needs ...;
    // use a smaller {n_bootstrap}"), for one that names arguments elsewhere than at its
    // start; empty otherwise (truescore_fast.errors.ArgumentError.template).
    const std::string& message_template() const noexcept { return template_; }

private:
    std::string argument_;
    std::string template_;
};

// More memory than can be had, asked for by the argument (truescore_fast.SizeError).
class SizeError : public ArgumentError {
public:
    using ArgumentError::ArgumentError;
};

// The error for `name` with the message `name` + `rest`: throw argument_error("n", " must
// be at least 2").
inline ArgumentError argument_error(const std::string& name, const std::string& rest) {
    return ArgumentError(name, name + rest);
}

}  // namespace truescore
