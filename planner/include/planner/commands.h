#pragma once
// The strata subcommands. Each registers itself on the top-level CLI11 app; its callback sets
// ctx.exit_code (0 ok, 2 valid request with no feasible plan) and throws InputError for bad input
// (exit 1, handled in main).
#include <CLI/CLI.hpp>

namespace strata {

struct CommandContext {
  int exit_code = 0;
};

void register_predict(CLI::App& app, CommandContext& ctx);
void register_validate(CLI::App& app, CommandContext& ctx);
void register_list(CLI::App& app, CommandContext& ctx);
void register_whatif(CLI::App& app, CommandContext& ctx);

}  // namespace strata
