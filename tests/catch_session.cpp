// Catch2's implementation, compiled once for every test program (it is the slowest translation
// unit of the suite: each main() that defined CATCH_CONFIG_RUNNER or CATCH_CONFIG_MAIN compiled it
// again, about a minute and a half each).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_session.h"

namespace minidl::testing {

int run_catch_session(int argc, char** argv) {
  Catch::Session session;
  const int rc = session.applyCommandLine(argc, argv);
  return rc != 0 ? rc : session.run();
}

}  // namespace minidl::testing
