#include <fmt/format.h>

#include "cli/commands.h"
#include "costmodel/catalog.h"
#include "costmodel/errors.h"

namespace strata {

void register_list(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("list", "List built-in models, GPUs or clusters");
  auto kind = std::make_shared<std::string>();
  cmd->add_option("kind", *kind, "models | gpus | clusters")->required();
  cmd->callback([kind, &ctx] {
    if (*kind != "models" && *kind != "gpus" && *kind != "clusters")
      throw InputError("command line", "list", "expected models, gpus or clusters, found \"" + *kind + "\"");
    Catalog catalog(Catalog::default_data_dir());
    auto entries = catalog.list(*kind);
    if (entries.empty()) throw InputError(catalog.data_dir(), *kind, "no data files found (set STRATA_DATA_DIR?)");
    for (const auto& e : entries) {
      std::string aliases;
      for (const auto& a : e.aliases) aliases += (aliases.empty() ? "" : ", ") + a;
      if (*kind == "models") {
        // Parameters at the model's own maximum sequence length (only learned positions depend on it).
        const ModelSpec m = catalog.model(e.path);
        fmt::print("{:<20} {:<28} {:>7.1f}B total {:>6.1f}B active  {}\n", e.id, e.name, m.total_params() / 1e9, m.active_params() / 1e9, aliases);
      } else {
        fmt::print("{:<20} {:<28} {}\n", e.id, e.name, aliases);
      }
    }
    ctx.exit_code = 0;
  });
}

}  // namespace strata
