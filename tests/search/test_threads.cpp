#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
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

TEST_CASE("check_openmp_can_start: a truncated OpenMP registration file of this pid is removed, a whole one kept") {
  if (!std::filesystem::is_directory("/dev/shm")) return;  // the runtime registers elsewhere: nothing to check
  // In a child: this process's own registration (made when an earlier test started OpenMP) must stay.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const std::string path = "/dev/shm/__KMP_REGISTERED_LIB_" + std::to_string(::getpid()) + "_" + std::to_string(::getuid());
    bool ok = true;
    std::ofstream(path).close();  // what a process that died between creating and sizing it leaves
    remove_truncated_openmp_registration();
    ok = ok && !std::filesystem::exists(path);
    std::ofstream(path) << std::string(1024, 'x');  // a whole one: the runtime reads it itself
    remove_truncated_openmp_registration();
    ok = ok && std::filesystem::file_size(path) == 1024;
    ::unlink(path.c_str());
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
}
