#pragma once
// The three kinds of failure (DESIGN.md, Conventions): a bug is an assertion; bad user input is an
// InputError naming the file, the JSON path (or flag) and what was expected; an infeasible plan is
// an ordinary Prediction with feasible == false and a reason.
#include <stdexcept>
#include <string>

namespace strata {

class InputError : public std::runtime_error {
 public:
  // where: a file name, "command line" or similar; path: a JSON path ("/num_layers") or a flag.
  InputError(std::string where, std::string path, const std::string& expected)
      : std::runtime_error(where + (path.empty() ? "" : ": " + path) + ": " + expected),
        where_(std::move(where)),
        path_(std::move(path)) {}
  const std::string& where() const { return where_; }
  const std::string& path() const { return path_; }

 private:
  std::string where_;
  std::string path_;
};

}  // namespace strata
