#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "costmodel/file_io.h"
#include "test_util.h"

using namespace strata;

namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A fresh directory under the temporary directory, removed at the end of the test.
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("strata_file_io_" + std::to_string(getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

TEST_SUITE("costmodel") {
TEST_CASE("read_input_file: regular files only, bounded") {
  TempDir dir;
  const std::string file = (dir.path / "a.json").string();
  std::ofstream(file) << "{\"a\": 1}";
  CHECK(read_input_file(file, 100, "a JSON document") == "{\"a\": 1}");
  CHECK(has(test::input_error([&] { read_input_file(file, 4, "a JSON document"); }), "a.json: larger than 0 KiB; expected a JSON document"));
  CHECK(has(test::input_error([&] { read_input_file((dir.path / "none").string(), 100, "x"); }),
            "none: cannot open the file for reading (no such file)"));
  CHECK(has(test::input_error([&] { read_input_file(dir.path.string(), 100, "x", "--plan"); }), ": --plan: is a directory; expected a regular file holding x"));
  const std::string fifo = (dir.path / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Refused without opening it: opening a FIFO with no writer would block forever.
  CHECK(has(test::input_error([&] { read_input_file(fifo, 100, "x"); }), "fifo: is a FIFO (named pipe)"));
  CHECK(has(test::input_error([&] { read_input_file("/dev/null", 100, "x"); }), "/dev/null: is a character device"));
  CHECK(has(test::input_error([&] { read_input_file("/dev/zero", 100, "x"); }), "/dev/zero: is a character device"));
  CHECK(has(test::input_error([&] { read_input_file("-", 100, "x"); }), "-: cannot open the file for reading"));  // no stdin unless allowed
}

TEST_CASE("write_output_file: whole or not at all, through a temporary file") {
  TempDir dir;
  const std::string file = (dir.path / "out.json").string();
  write_output_file(file, "first\n", "--output");
  CHECK(slurp(file) == "first\n");
  write_output_file(file, "second\n", "--output");
  CHECK(slurp(file) == "second\n");
  // No temporary file is left behind.
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator{}) == 1);
  // The mode of an existing file is kept.
  ::chmod(file.c_str(), 0640);
  write_output_file(file, "third\n", "--output");
  struct stat st {};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);
  // Through a symbolic link: the file it names is replaced, the link stays.
  const fs::path link = dir.path / "link.json";
  fs::create_symlink(file, link);
  write_output_file(link.string(), "fourth\n", "--output");
  CHECK(fs::is_symlink(link));
  CHECK(slurp(file) == "fourth\n");

  CHECK(has(test::input_error([&] { write_output_file("/dev/full", "x", "--csv"); }), "/dev/full: --csv: is a character device"));
  CHECK(has(test::input_error([&] { write_output_file(dir.path.string(), "x", "-o"); }), ": -o: is a directory"));
  CHECK(has(test::input_error([&] { write_output_file((dir.path / "no" / "x.json").string(), "x", "--trace"); }),
            "x.json: --trace: cannot write the file: cannot create a temporary file in"));
  CHECK(has(test::input_error([&] { write_output_file("", "x", "--plot"); }), "--plot: expected a file name"));
}
}
