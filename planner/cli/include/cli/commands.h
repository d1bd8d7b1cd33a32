#pragma once
// The strata subcommands. Each registers itself on the top-level CLI11 app; its callback sets
// ctx.exit_code (0 ok, 2 valid request with no feasible plan) and throws InputError for bad input
// (exit 1, handled in main).
#include <string>

#include <CLI/CLI.hpp>

namespace strata {

struct CommandContext {
  int exit_code = 0;
};

void register_predict(CLI::App& app, CommandContext& ctx);
void register_validate(CLI::App& app, CommandContext& ctx);
void register_list(CLI::App& app, CommandContext& ctx);
void register_plan(CLI::App& app, CommandContext& ctx);
// `strata profile` records `command_line` (how the profile was measured) in the profile file.
void register_profile(CLI::App& app, CommandContext& ctx, const std::string& command_line);
void register_trace(CLI::App& app, CommandContext& ctx);
void register_calibrate(CLI::App& app, CommandContext& ctx);

// What `profile` and `trace` say when strata was built without the CUDA part.
extern const char* const kNoCudaMessage;
void register_whatif(CLI::App& app, CommandContext& ctx);

}  // namespace strata
