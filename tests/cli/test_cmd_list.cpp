#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "test_util.h"

using strata::test::run_strata;

TEST_SUITE("cli") {
TEST_CASE("strata list") {
  SUBCASE("lists exactly the shipped files, one line each, starting with the id") {
    for (const auto& [kind_, sub] : std::vector<std::pair<std::string, std::string>>{
             {"models", "models"}, {"gpus", "configs/gpus"}, {"clusters", "configs/clusters"}}) {
      const auto& kind = kind_;  // a plain name: clang 14 cannot capture structured bindings (CAPTURE)
      CAPTURE(kind);
      auto r = run_strata("list " + kind);
      CHECK(r.exit_code == 0);
      // One line per shipped file, starting with its id.
      std::set<std::string> listed;
      std::istringstream in(r.out);
      for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string id;
        words >> id;
        if (!id.empty()) listed.insert(id);
      }
      std::set<std::string> shipped;
      for (const auto& f : std::filesystem::directory_iterator(std::string(STRATA_SOURCE_DIR) + "/" + sub))
        if (f.path().extension() == ".json") shipped.insert(f.path().stem().string());
      CHECK(listed == shipped);
    }
  }
  SUBCASE("names and aliases are shown") {
    auto r = run_strata("list gpus");
    CHECK(r.out.find("A100-SXM4-80GB") != std::string::npos);
    CHECK(r.out.find("h100-sxm5") != std::string::npos);
  }
  SUBCASE("an unknown kind exits 1") {
    auto r = run_strata("list foo");
    CHECK(r.exit_code == 1);
    CHECK(r.out.find("expected models, gpus or clusters, found \"foo\"") != std::string::npos);
  }
  SUBCASE("a missing kind is a usage error") { CHECK(run_strata("list").exit_code == 1); }
}
}
