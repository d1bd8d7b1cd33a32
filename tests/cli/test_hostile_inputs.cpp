// Hostile inputs end to end (issue 18): the table tests/data/hostile/cases.txt, one case a line,
//   EXIT | FRAGMENT | COMMAND
// COMMAND is a bash snippet in which `strata` runs the built executable; EXIT is the snippet's exit
// status and FRAGMENT (may be empty) must appear in its stdout+stderr. "## class" lines group the
// cases; each class is one test. Every snippet runs under a 4 GiB address-space limit (ulimit -v;
// not under AddressSanitizer, whose shadow memory needs terabytes of address space), and every
// strata run in it under a 20 s timeout: a run that ends by a signal, by the timeout or with exit 3
// (an internal error) fails its case whatever the snippet's status.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "test_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define STRATA_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_TEST_ASAN 1
#endif
#endif

namespace {

namespace fs = std::filesystem;

struct HostileCase {
  int line = 0;
  int exit_code = 0;
  std::string fragment;
  std::string command;
};

const std::string kSource = STRATA_SOURCE_DIR;

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// Cases by class, in file order.
std::map<std::string, std::vector<HostileCase>> read_cases() {
  std::map<std::string, std::vector<HostileCase>> out;
  std::ifstream in(kSource + "/tests/data/hostile/cases.txt");
  REQUIRE(in);
  std::string line, cls;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.starts_with("## ")) {
      cls = trim(line.substr(3));
      continue;
    }
    if (trim(line).empty() || line.starts_with("#")) continue;
    const auto a = line.find(" | ");
    const auto b = a == std::string::npos ? a : line.find(" | ", a + 3);
    REQUIRE_MESSAGE(b != std::string::npos, "cases.txt:" << n << ": expected EXIT | FRAGMENT | COMMAND");
    HostileCase c;
    c.line = n;
    c.exit_code = std::stoi(trim(line.substr(0, a)));
    c.fragment = trim(line.substr(a + 3, b - a - 3));
    c.command = trim(line.substr(b + 3));
    out[cls].push_back(c);
  }
  return out;
}

// Runs a shell command; a child ended by signal N reads as 128+N, as in the shell.
strata::test::RunResult run_command(const std::string& cmd) {
  strata::test::RunResult r;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) r.out.append(buf.data(), n);
  const int status = pclose(pipe.release());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  return r;
}

// Removes the scratch directory when the test process ends.
struct ScratchDir {
  std::string path;
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// A scratch directory with a FIFO and a plan file the cases use ($T), made once per test process.
const std::string& scratch() {
  static const ScratchDir dir{[] {
    const fs::path d = fs::temp_directory_path() / ("strata_hostile_" + std::to_string(getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    ::mkfifo((d / "fifo").c_str(), 0600);
    ::mkfifo((d / "fifo.json").c_str(), 0600);
    const auto r = strata::test::run_strata(
        "predict --model gpt3-1.3b --gpu a100-80gb --gpus 8 --global-batch 64 --seq 2048 -o '" + (d / "plan.json").string() + "'");
    REQUIRE_MESSAGE(r.exit_code == 0, r.out);
    return d.string();
  }()};
  return dir.path;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// The bash script of one case: limits, variables, the `strata` function, then the snippet.
std::string script_for(const HostileCase& c) {
  std::string s;
#ifndef STRATA_TEST_ASAN
  s += "ulimit -v 4194304\n";  // 4 GiB of address space
#endif
  s += "export STRATA_DATA_DIR=" + quoted(kSource) + "\n";
  s += "STRATA_EXE=" + quoted(STRATA_EXE) + "\n";
  s += "SRC=" + quoted(kSource) + "\nD=" + quoted(kSource + "/tests/data/hostile") + "\nBAD=" + quoted(kSource + "/tests/data/bad") +
       "\nT=" + quoted(scratch()) + "\n";
  s += "W='--model gpt3-1.3b --gpu a100-80gb --gpus 8 --global-batch 64 --seq 2048'\n";
  s += "SWEEP='--model gpt3-1.3b --gpu a100-80gb --gpus 8,16 --global-batch 64 --seq 2048 --tokens 1e9 --quiet'\n";
  // A run ending by a signal (128+N), the timeout (124/137) or exit 3 is marked for the check.
  s += "strata() { timeout -k 2 20 \"$STRATA_EXE\" \"$@\"; local rc=$?; "
       "if [ $rc -eq 3 ] || [ $rc -ge 124 ]; then echo \"HOSTILE-BAD-EXIT $rc\" >&2; fi; return $rc; }\n";
  s += "cd \"$T\"\n";
  s += c.command + "\n";
  return s;
}

void run_class(const std::string& cls) {
  static const auto cases = read_cases();
  REQUIRE_MESSAGE(cases.count(cls) > 0, "no cases of class " << cls);
  for (const HostileCase& c : cases.at(cls)) {
    const std::string file = scratch() + "/case_" + std::to_string(c.line) + ".sh";
    std::ofstream(file) << script_for(c);
    const auto r = run_command("bash " + quoted(file) + " 2>&1");
    INFO("cases.txt:" << c.line << ": " << c.command << "\n--- output (exit " << r.exit_code << ") ---\n" << r.out.substr(0, 4000));
    CHECK(r.exit_code == c.exit_code);
    CHECK(r.out.find(c.fragment) != std::string::npos);
    CHECK(r.out.find("HOSTILE-BAD-EXIT") == std::string::npos);
    CHECK(r.out.find("internal error") == std::string::npos);
  }
}

}  // namespace

TEST_SUITE("cli") {
TEST_CASE("hostile: thread counts and sizes never crash by a signal") { run_class("signals and sizes"); }
TEST_CASE("hostile: input files are read bounded, regular files only") { run_class("bounded reads"); }
TEST_CASE("hostile: outputs are written whole or not at all") { run_class("failed writes"); }
TEST_CASE("hostile: no request is silently ignored") { run_class("ignored requests"); }
TEST_CASE("hostile: wrong values and launch arithmetic are refused or read as bash does") { run_class("wrong answers"); }
TEST_CASE("hostile: exit codes and messages") { run_class("exit codes"); }
TEST_CASE("hostile: plan JSON is byte-identical and the search says what it ran") { run_class("determinism"); }
TEST_CASE("hostile: the build links LLVM's OpenMP runtime") { run_class("build"); }
}
