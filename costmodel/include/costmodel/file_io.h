#pragma once
// The one way strata reads an input file and writes an output file (docs/robustness.md).
//
// Reading: only regular files (or "-" for standard input where a command allows it). A FIFO would
// block forever, /dev/zero never ends, a directory or /dev/null is not a file the user meant: each is
// refused with a message that says what the path is. The total size is capped while reading, so a
// file that grows (or a pipe on stdin) cannot exhaust memory.
//
// Writing: the text goes to a temporary file in the target's directory; every write and the close
// are checked, then the temporary file is renamed over the target. A failed write (disk full,
// /dev/full, a read-only directory) leaves the old file untouched and throws InputError naming the
// file. Existing targets that are not regular files (devices, FIFOs, directories) are refused:
// renaming over them would replace the device node.
#include <cstddef>
#include <string>

namespace strata {

inline constexpr std::size_t kMaxJsonInputBytes = std::size_t{64} << 20;   // a JSON document
inline constexpr std::size_t kMaxScriptInputBytes = std::size_t{16} << 20;  // a launch script or flag file

// Reads `path` ("-": standard input when `allow_stdin`). `what` says what the file should be
// ("a JSON document", "a launch script"); `flag` the option that named it (may be empty). Throws
// InputError naming the file: no such file, a directory, a FIFO, a device, unreadable, too large.
std::string read_input_file(const std::string& path, std::size_t max_bytes, const std::string& what,
                            const std::string& flag = "", bool allow_stdin = false);

// Writes `text` to `path` atomically as described above; `flag` names the option (-o, --csv,
// --trace, ...) in the error message.
void write_output_file(const std::string& path, const std::string& text, const std::string& flag);

}  // namespace strata
