// main() of the single-process test programs.
#include "catch_session.h"

int main(int argc, char** argv) { return minidl::testing::run_catch_session(argc, argv); }
