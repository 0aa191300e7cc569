// Library warnings (the C++ form of Python's warnings module for minidl): every warning the library
// gives goes through warn(), which hands it to the current handler. The default handler prints
// "minidl warning: <message>" to stderr; a program can capture, redirect or silence warnings:
//   auto previous = minidl::set_warning_handler([](const std::string& m) { log(m); });
//   minidl::set_warning_handler([](const std::string&) {});  // silence
//   minidl::set_warning_handler(nullptr);                    // back to the default
// The handler is process-wide and may be called from any thread (calls are serialized).
#pragma once
#include <functional>
#include <string>

namespace minidl {

using WarningHandler = std::function<void(const std::string& message)>;

// Installs handler (an empty one restores the default) and returns the one it replaces (empty when
// that was the default).
WarningHandler set_warning_handler(WarningHandler handler);

// Gives a warning to the current handler.
void warn(const std::string& message);

}  // namespace minidl
