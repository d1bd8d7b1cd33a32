#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "search/threads.h"

using namespace strata;

TEST_SUITE("search") {
TEST_CASE("search_threads: never more than the cores, at least one") {
  const int cores = available_cores();
  CHECK(cores >= 1);
  CHECK(search_threads(1) == 1);
  CHECK(search_threads(65536) == cores);
  CHECK(search_threads(-7) >= 1);
  CHECK(search_threads(0) <= cores);
  CHECK(search_threads(0) >= 1);
}

TEST_CASE("cap_openmp_threads_from_environment: OMP_NUM_THREADS beyond the cores or not a number is replaced") {
  const char* saved = std::getenv("OMP_NUM_THREADS");
  const std::string restore = saved ? saved : "";
  auto env_after = [](const char* value) {
    setenv("OMP_NUM_THREADS", value, 1);
    cap_openmp_threads_from_environment();
    return std::string(std::getenv("OMP_NUM_THREADS"));
  };
  const int cores = available_cores();
  CHECK(env_after("65536") == std::to_string(cores));
  CHECK(env_after("-3") == std::to_string(cores));
  CHECK(env_after("banana") == std::to_string(cores));
  CHECK(env_after("99999999999999999999999") == std::to_string(cores));
  CHECK(env_after("1") == "1");  // within the cores: left alone
  if (saved) setenv("OMP_NUM_THREADS", restore.c_str(), 1);
  else unsetenv("OMP_NUM_THREADS");
}
}
