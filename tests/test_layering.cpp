// The floors of the house, checked on the sources themselves (C++, headers and CUDA files alike):
// a file includes only files of its own floor or of floors below it, and no include cycle exists.
// Floors, bottom up: core (framework/) -> autocast state (autocast/) -> ops (ops/, with ops/cpu and
// ops/cuda) -> autograd engine and serialization (autograd/, serialize/) -> modules and optimizers
// (nn/, optim/) -> amp (amp/) -> data (data/) -> distributed training (distributed/) -> the umbrella
// header (minidl.h) -> programs.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {
const fs::path kRoot = MINIDL_SOURCE_DIR;

// The floor of a project file (by its top folder), or -1 for files outside the floors.
int floor_of(const std::string& rel) {
  static const std::map<std::string, int> floors = {
      {"framework", 1}, {"autocast", 2}, {"ops", 3},  {"autograd", 4}, {"serialize", 4}, {"nn", 5},
      {"optim", 5},     {"amp", 6},      {"data", 7}, {"distributed", 8}, {"minidl.h", 9}, {"apps", 10}, {"bench", 10},
  };
  const std::string top = rel.substr(0, rel.find('/'));
  auto it = floors.find(top);
  return it == floors.end() ? -1 : it->second;
}

bool is_source(const fs::path& p) {
  static const std::set<std::string> exts = {".h", ".cpp", ".cu", ".cuh"};
  return exts.count(p.extension().string()) != 0;
}

// Project-relative paths of every source file on a floor, with the project files each includes.
std::map<std::string, std::vector<std::string>> include_graph() {
  std::map<std::string, std::vector<std::string>> graph;
  const std::regex include_line(R"re(^\s*#\s*include\s*"([^"]+)")re");
  for (auto it = fs::recursive_directory_iterator(kRoot); it != fs::recursive_directory_iterator(); ++it) {
    const fs::path rel = fs::relative(it->path(), kRoot);
    const std::string top = *rel.begin();
    if (it->is_directory() && (top.rfind("build", 0) == 0 || top[0] == '.' || top == "tests")) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || !is_source(it->path()) || floor_of(rel.string()) < 0) continue;
    std::ifstream in(it->path());
    std::vector<std::string>& out = graph[rel.string()];
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (std::regex_search(line, m, include_line) && fs::exists(kRoot / m[1].str())) out.push_back(m[1].str());
    }
  }
  return graph;
}
}  // namespace

TEST_CASE("no file includes a file of a higher floor", "[layering]") {
  const auto graph = include_graph();
  REQUIRE(graph.count("ops/tensor.h") == 1);
  REQUIRE(graph.count("framework/cuda/runtime.cu") == 1);  // CUDA sources are read too
  size_t edges = 0;
  for (const auto& [file, includes] : graph)
    for (const std::string& inc : includes) {
      ++edges;
      INFO(file << " includes " << inc);
      CHECK(floor_of(inc) <= floor_of(file));
    }
  CHECK(edges > 200);
}

TEST_CASE("the include graph has no cycle", "[layering]") {
  const auto graph = include_graph();
  std::map<std::string, int> state;  // 1: on the current path, 2: done
  std::vector<std::string> path;
  std::function<void(const std::string&)> visit = [&](const std::string& f) {
    state[f] = 1;
    path.push_back(f);
    auto it = graph.find(f);
    if (it != graph.end())
      for (const std::string& inc : it->second) {
        if (state[inc] == 1) {
          std::string cycle;
          for (const std::string& p : path) cycle += p + " -> ";
          FAIL("include cycle: " << cycle << inc);
        }
        if (state[inc] == 0) visit(inc);
      }
    path.pop_back();
    state[f] = 2;
  };
  for (const auto& [file, includes] : graph)
    if (state[file] == 0) visit(file);
  SUCCEED();
}
