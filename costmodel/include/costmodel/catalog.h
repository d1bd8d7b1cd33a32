#pragma once
// Finds the built-in data (models/, configs/gpus, configs/clusters, configs/calibration) and
// resolves user-given names ("h100", "H100-SXM5-80GB", "llama3-70b") or file paths to specs.
#include <optional>
#include <string>
#include <vector>

#include "costmodel/calibration.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/gpu_spec.h"
#include "costmodel/model_spec.h"

namespace strata {

class Catalog {
 public:
  // data_dir holds models/ and configs/. default_data_dir(): $STRATA_DATA_DIR, else the build's
  // configured source directory.
  explicit Catalog(std::string data_dir);
  static std::string default_data_dir();

  const std::string& data_dir() const { return dir_; }

  // A name from the catalog (loose match), or a path to a JSON file (strata format or, for models,
  // a Hugging Face config.json). Unknown names throw InputError with the closest names.
  ModelSpec model(const std::string& name_or_path) const;
  GpuSpec gpu(const std::string& name_or_path) const;
  ClusterSpec cluster(const std::string& name_or_path) const;
  // configs/calibration/<gpu id>.json when present, else nullopt.
  std::optional<Calibration> calibration_for(const GpuSpec& gpu) const;
  // calibration_for(gpu), else the architecture's documented defaults (default_calibration).
  Calibration calibration_or_default(const GpuSpec& gpu) const;

  struct Entry {
    std::string id;  // file stem
    std::string name;
    std::vector<std::string> aliases;
    std::string path;
  };
  std::vector<Entry> list(const std::string& kind) const;  // "models", "gpus", "clusters"

 private:
  std::string resolve(const std::string& kind, const std::string& name_or_path, const std::string& flag) const;
  std::string dir_;
};

// A Hugging Face hub id, "org/name": one '/' with text on both sides, not a .json or relative path.
bool is_hugging_face_id(const std::string& s);

// Lowercase with separators removed: "H100-SXM5-80GB" -> "h100sxm580gb".
std::string normalize_name(const std::string& s);

}  // namespace strata
