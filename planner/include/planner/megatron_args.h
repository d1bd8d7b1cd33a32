#pragma once
// The Megatron-LM command-line flags that run a plan, spelled as Megatron-LM spells them
// (megatron/training/arguments.py).
#include <string>
#include <vector>

#include "costmodel/job.h"

namespace strata {

std::vector<std::string> megatron_args(const Job& job);
// Flags joined into one shell-ready line.
std::string join_args(const std::vector<std::string>& args);

}  // namespace strata
