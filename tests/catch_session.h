// The Catch2 session, compiled once (tests/catch_session.cpp holds Catch2's implementation) and
// run by every test program's main(): tests/test_main.cpp, and the multi-rank mains in tests/dist/,
// which start a process group around it.
#pragma once

namespace minidl::testing {

// Applies the command line and runs the registered test cases; returns Catch2's exit status.
int run_catch_session(int argc, char** argv);

}  // namespace minidl::testing
