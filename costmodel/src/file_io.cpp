#include "costmodel/file_io.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "costmodel/errors.h"

namespace strata {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// What a path that is not a regular file is, for the message.
std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string size_text(std::size_t bytes) {
  return bytes >= (std::size_t{1} << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes >> 10) + " KiB";
}

// Reads fd to its end, refusing more than max_bytes.
std::string read_all(int fd, std::size_t max_bytes, const std::string& path, const std::string& flag, const std::string& what) {
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(path, flag, "error while reading the file (" + errno_text(errno) + ")");
    }
    if (text.size() + static_cast<std::size_t>(n) > max_bytes)
      throw InputError(path, flag, "larger than " + size_text(max_bytes) + "; expected " + what);
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_input_file(const std::string& path, std::size_t max_bytes, const std::string& what, const std::string& flag,
                            bool allow_stdin) {
  if (path == "-" && allow_stdin) return read_all(STDIN_FILENO, max_bytes, "standard input", flag, what);
  if (path.empty()) throw InputError("command line", flag, "expected a file name, found an empty one");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    throw InputError(path, flag, "cannot open the file for reading (" + std::string(err == ENOENT ? "no such file" : errno_text(err)) + ")");
  }
  const std::string refuse = "; expected a regular file holding " + what;
  if (!S_ISREG(st.st_mode)) throw InputError(path, flag, "is " + kind_of(st.st_mode) + refuse);
  if (static_cast<std::uintmax_t>(st.st_size) > max_bytes)
    throw InputError(path, flag, "larger than " + size_text(max_bytes) + "; expected " + what);
  // O_NONBLOCK: if the path was swapped for a FIFO since the stat, open must not wait for a writer.
  Fd f{::open(path.c_str(), O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) throw InputError(path, flag, "cannot open the file for reading (" + errno_text(errno) + ")");
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) throw InputError(path, flag, "is " + kind_of(st.st_mode) + refuse);
  return read_all(f.fd, max_bytes, path, flag, what);
}

void write_output_file(const std::string& path, const std::string& text, const std::string& flag) {
  if (path.empty()) throw InputError("command line", flag, "expected a file name to write, found an empty one");
  // Write through a symbolic link to the file it names, as `>` would.
  std::string target = path;
  if (char* real = ::realpath(path.c_str(), nullptr)) {
    target = real;
    std::free(real);
  }
  struct stat st {};
  const bool exists = ::stat(target.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode))
    throw InputError(path, flag, "is " + kind_of(st.st_mode) + "; strata writes its output to regular files only");
  const std::size_t slash = target.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : target.substr(0, slash);
  const std::string base = slash == std::string::npos ? target : target.substr(slash + 1);
  std::string tmp = (dir == "/" ? "" : dir) + "/." + base + ".strata-XXXXXX";
  Fd f{::mkstemp(tmp.data())};
  if (f.fd < 0)
    throw InputError(path, flag, "cannot write the file: cannot create a temporary file in " + dir + " (" + errno_text(errno) + ")");
  auto fail = [&](const std::string& why) {
    ::unlink(tmp.c_str());
    throw InputError(path, flag, "cannot write the file (" + why + "); nothing was written");
  };
  // mkstemp creates 0600: give the file the old file's mode, or what the umask allows for a new one.
  mode_t mode = 0666;
  if (exists) {
    mode = st.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode &= ~mask;
  }
  ::fchmod(f.fd, mode);
  std::string_view rest = text;
  while (!rest.empty()) {
    const ssize_t n = ::write(f.fd, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(n < 0 ? errno_text(errno) : "short write");
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  const int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0) fail(errno_text(errno));
  if (::rename(tmp.c_str(), target.c_str()) != 0) fail(errno_text(errno));
}

}  // namespace strata
