#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "costmodel/catalog.h"
#include "costmodel/json_reader.h"
#include "test_util.h"

using namespace strata;
using test::input_error;

namespace {

// The .json files of a data folder, counted independently of Catalog::list.
std::set<std::string> json_stems(const std::string& sub) {
  std::set<std::string> out;
  for (const auto& f : std::filesystem::directory_iterator(std::string(STRATA_SOURCE_DIR) + "/" + sub))
    if (f.path().extension() == ".json") out.insert(f.path().stem().string());
  return out;
}

}  // namespace

TEST_SUITE("costmodel") {
TEST_CASE("normalize_name") {
  CHECK(normalize_name("H100-SXM5-80GB") == "h100sxm580gb");
  CHECK(normalize_name("Llama 3.1_405B") == "llama3.1405b");  // dots are kept: 3.1 is not 31
  CHECK(normalize_name("") == "");
}

TEST_CASE("Catalog::gpu") {
  const Catalog& c = test::catalog();
  SUBCASE("loose names resolve to the same GPU") {
    CHECK(c.gpu("h100").name == "H100-SXM5-80GB");
    CHECK(c.gpu("H100-SXM5-80GB").name == "H100-SXM5-80GB");
    CHECK(c.gpu("h100_sxm5_80gb").name == "H100-SXM5-80GB");
    CHECK(c.gpu("A100-SXM4-80GB").name == "A100-SXM4-80GB");
    CHECK(c.gpu("a100-80gb").name == "A100-SXM4-80GB");
    // A longer spelling of a known name resolves to it.
    CHECK(c.gpu("H100-SXM5-80GB-HBM3").name == "H100-SXM5-80GB");
  }
  SUBCASE("vendor and system words before the part are skipped") {
    CHECK(c.gpu("NVIDIA H100 80GB HBM3").name == "H100-SXM5-80GB");  // torch.cuda.get_device_name
    CHECK(c.gpu("NVIDIA B200").name == "B200-SXM-180GB");
    CHECK(c.gpu("HGX B200").name == "B200-SXM-180GB");
    CHECK(c.gpu("DGX H100").name == "H100-SXM5-80GB");
    CHECK(c.gpu("AMD Instinct MI300X").name == "MI300X");
    CHECK(c.gpu("AMD Instinct MI325X").name == "MI325X");
    CHECK(c.gpu("AMD Instinct MI355X").name == "MI355X");
    CHECK(c.gpu("NVIDIA GB300 NVL72").name == "GB300-B300-288GB");
    CHECK(c.gpu("GB200 NVL72").name == "GB200-B200-186GB");
    // The architecture before the part, and an alias's words in another order.
    CHECK(c.gpu("Blackwell B200").name == "B200-SXM-180GB");
    CHECK(c.gpu("NVIDIA Grace Blackwell GB200").name == "GB200-B200-186GB");
    CHECK(c.gpu("Grace Blackwell GB200 NVL72").name == "GB200-B200-186GB");
    CHECK(c.gpu("Blackwell Ultra GB300").name == "GB300-B300-288GB");
    CHECK(c.gpu("Grace Hopper GH200").name == "GH200-H100-96GB");
    CHECK(c.gpu("H100 80GB PCIe").name == "H100-PCIe-80GB");
    CHECK(c.gpu("NVIDIA H100 80GB PCIe").name == "H100-PCIe-80GB");
    // ... but not the words that name another variant of the part, nor the vendor alone.
    CHECK(input_error([&] { c.gpu("NVIDIA A100 80GB PCIe"); }).find("unknown gpu") != std::string::npos);
    CHECK(input_error([&] { c.gpu("NVIDIA H100 NVL"); }).find("unknown gpu") != std::string::npos);
    CHECK(input_error([&] { c.gpu("NVIDIA"); }).find("unknown gpu") != std::string::npos);
    // A memory size right after a part's name is another part: never the listed size.
    CHECK(input_error([&] { c.gpu("h200-100gb"); }).find("unknown gpu") != std::string::npos);
    CHECK(input_error([&] { c.gpu("GH200 120GB"); }).find("unknown gpu") != std::string::npos);
    CHECK(c.gpu("GH200 144GB").name == "GH200-H100-144GB");
    CHECK(c.gpu("NVIDIA GH200 Grace Hopper Superchip").name == "GH200-H100-96GB");
  }
  SUBCASE("the H800 is the H100 SXM with its NVLink cut to 400 GB/s both ways") {
    const GpuSpec h800 = c.gpu("NVIDIA H800"), h100 = c.gpu("h100-sxm");
    CHECK(h800.bf16_tflops == h100.bf16_tflops);
    CHECK(h800.fp8_tflops == h100.fp8_tflops);
    CHECK(h800.memory_GiB == h100.memory_GiB);
    CHECK(h800.nvlink_GBps == 200);
    CHECK(c.cluster("hgx-h800").gpu.name == h800.name);
  }
  SUBCASE("the A800 is the A100 80GB SXM with its NVLink cut to 400 GB/s both ways") {
    const GpuSpec a800 = c.gpu("NVIDIA A800-SXM4-80GB"), a100 = c.gpu("a100-80gb");
    CHECK(a800.name == "A800-SXM4-80GB");
    CHECK(a800.bf16_tflops == a100.bf16_tflops);
    CHECK(a800.hbm_GBps == a100.hbm_GBps);
    CHECK(a800.memory_GiB == a100.memory_GiB);
    CHECK(a800.nvlink_GBps == 200);
    CHECK(a100.nvlink_GBps == 300);
    CHECK(c.cluster("hgx-a800").gpu.name == a800.name);
    CHECK(c.cluster("hgx-a800").intra_node_GBps == 200);
    // The A800's 40GB PCIe card is another part.
    CHECK(input_error([&] { c.gpu("A800 40GB PCIe"); }).find("unknown gpu") != std::string::npos);
  }
  SUBCASE("an unknown GPU names the flag and the list command") {
    std::string msg = input_error([&] { c.gpu("tpu-v5p"); });
    CHECK(msg.find("--gpu") != std::string::npos);
    CHECK(msg.find("unknown gpu \"tpu-v5p\"") != std::string::npos);
    CHECK(msg.find("strata list gpus") != std::string::npos);
  }
  SUBCASE("a path to a missing file") {
    CHECK(input_error([&] { c.gpu("/nonexistent/gpu.json"); }).find("no such file (given to --gpu)") != std::string::npos);
  }
  SUBCASE("an empty name") { CHECK(input_error([&] { c.gpu(""); }).find("--gpu") != std::string::npos); }
}

TEST_CASE("Catalog::model") {
  const Catalog& c = test::catalog();
  SUBCASE("loose names") {
    CHECK(c.model("llama3-70b").num_layers == 80);
    CHECK(c.model("Llama-3-70B").num_layers == 80);
    CHECK(c.model("meta-llama-3-70b").num_layers == 80);
    CHECK(c.model("gpt3-175b").hidden_size == 12288);
  }
  SUBCASE("an unknown name suggests the close one") {
    std::string msg = input_error([&] { c.model("llama3-71b"); });
    CHECK(msg.find("--model") != std::string::npos);
    CHECK(msg.find("did you mean \"llama3-70b\"?") != std::string::npos);
    msg = input_error([&] { c.model("llama2-7"); });
    CHECK(msg.find("did you mean \"llama2-7b\"?") != std::string::npos);
    CHECK(msg.find("strata list models") != std::string::npos);
  }
  SUBCASE("a path to a model file or a Hugging Face config.json") {
    CHECK(c.model(std::string(STRATA_SOURCE_DIR) + "/models/llama2-7b.json") == c.model("llama2-7b"));
    test::TempFile cfg("config.json", R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
      "num_attention_heads": 32, "num_hidden_layers": 32, "vocab_size": 32000, "max_position_embeddings": 4096})");
    ModelSpec m = c.model(cfg.path());
    CHECK(m.num_layers == 32);
    CHECK(m.source.find(cfg.path()) != std::string::npos);
  }
  SUBCASE("a Hugging Face id that is no file here names the built-in model of that exact name") {
    CHECK(c.model("meta-llama/Meta-Llama-3-8B") == c.model("llama3-8b"));  // the name part is an alias
    CHECK(c.model("Qwen/Qwen3-30B-A3B") == c.model("qwen3-30b-a3b"));
    CHECK(c.model("deepseek-ai/DeepSeek-V3") == c.model("deepseek-v3"));
    // No loose matching for ids: another size of a family is another model.
    std::string msg = input_error([&] { c.model("meta-llama/Llama-3.1-13B"); });
    CHECK(msg.find("no such file (given to --model); as a Hugging Face id it names no built-in model") != std::string::npos);
    // A path of more than one folder is a path.
    msg = input_error([&] { c.model("configs/meta-llama/Meta-Llama-3-8B"); });
    CHECK(msg.find("no such file (given to --model)") != std::string::npos);
    CHECK(msg.find("Hugging Face") == std::string::npos);
    CHECK(input_error([&] { c.gpu("nvidia/H100"); }).find("Hugging Face") == std::string::npos);
  }
  SUBCASE("a broken file names the file") {
    test::TempFile bad("bad_model.json", R"({"name": "x", "num_layers": "many"})");
    std::string msg = input_error([&] { c.model(bad.path()); });
    CHECK(msg.find(bad.path()) != std::string::npos);
    CHECK(msg.find("/num_layers") != std::string::npos);
  }
}

TEST_CASE("Catalog::cluster") {
  const Catalog& c = test::catalog();
  ClusterSpec d = c.cluster("dgx-a100-hdr");
  CHECK(d.gpu.name == "A100-SXM4-80GB");
  CHECK(c.cluster("DGX-A100-HDR") == d);
  CHECK(input_error([&] { c.cluster("superpod-zz"); }).find("--cluster: unknown cluster \"superpod-zz\"") != std::string::npos);
}

TEST_CASE("Catalog::model: a longer name only resolves when it extends the whole name") {
  const Catalog& c = test::catalog();
  CHECK_THROWS_AS(c.model("gpt3-20b"), InputError);
  CHECK_THROWS_AS(c.model("gpt3-1t"), InputError);
  CHECK(input_error([&] { c.gpu("a100-40"); }).find("unknown gpu") != std::string::npos);
  CHECK(input_error([&] { c.gpu("a100-pcie"); }).find("unknown gpu") != std::string::npos);
  CHECK(input_error([&] { c.gpu("h100-nvl"); }).find("unknown gpu") != std::string::npos);
}

TEST_CASE("Catalog::calibration_for") {
  // A data directory of one GPU, with and then without its calibration file.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("strata_test_catalog_" + std::to_string(getpid()));
  fs::create_directories(dir / "configs" / "gpus");
  fs::create_directories(dir / "configs" / "calibration");
  fs::copy_file(std::string(STRATA_SOURCE_DIR) + "/configs/gpus/h100-sxm.json", dir / "configs" / "gpus" / "h100-sxm.json");
  std::ofstream(dir / "configs" / "calibration" / "h100-sxm.json")
      << R"({"schema_version": 1, "source": "profiled on node 7", "kernel": {"gemm_efficiency": 0.7}})";
  Catalog c(dir.string());
  GpuSpec g = c.gpu("h100");
  auto cal = c.calibration_for(g);
  REQUIRE(cal.has_value());
  CHECK(cal->source == "profiled on node 7");
  CHECK(cal->kernel.gemm_efficiency == 0.7);
  CHECK(c.calibration_or_default(g) == *cal);
  fs::remove(dir / "configs" / "calibration" / "h100-sxm.json");
  CHECK_FALSE(c.calibration_for(g).has_value());
  CHECK(c.calibration_or_default(g) == default_calibration(g));
  // A GPU of another catalog has no calibration here.
  CHECK_FALSE(c.calibration_for(test::catalog().gpu("a100-80gb")).has_value());
  fs::remove_all(dir);
}

TEST_CASE("Catalog::default_data_dir") {
  // The tests run with STRATA_DATA_DIR set to the source tree (tests/CMakeLists.txt).
  const char* env = std::getenv("STRATA_DATA_DIR");
  if (env && *env) CHECK(Catalog::default_data_dir() == env);
  CHECK_FALSE(Catalog::default_data_dir().empty());
}

TEST_CASE("Catalog::list") {
  const Catalog& c = test::catalog();
  const std::vector<std::pair<std::string, std::string>> kinds = {
      {"models", "models"}, {"gpus", "configs/gpus"}, {"clusters", "configs/clusters"}};
  SUBCASE("lists exactly the shipped files, sorted") {
    for (const auto& [kind_, sub] : kinds) {
      const auto& kind = kind_;  // a plain name: clang 14 cannot capture structured bindings (CAPTURE)
      CAPTURE(kind);
      auto entries = c.list(kind);
      std::set<std::string> ids;
      for (const auto& e : entries) ids.insert(e.id);
      CHECK(ids == json_stems(sub));
      CHECK(std::is_sorted(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.id < b.id; }));
    }
  }
  SUBCASE("every shipped file loads and is resolvable by its id and its name") {
    for (const auto& e : c.list("models")) {
      CAPTURE(e.id);
      ModelSpec m;
      CHECK_NOTHROW(m = c.model(e.path));
      CHECK(m == c.model(e.id));
      CHECK(m == c.model(e.name));
      CHECK_NOTHROW(validate_model(m, e.path));
      CHECK(m.total_params(m.max_seq_length) > 0);
    }
    for (const auto& e : c.list("gpus")) {
      CAPTURE(e.id);
      GpuSpec g;
      CHECK_NOTHROW(g = c.gpu(e.path));
      CHECK(g == c.gpu(e.id));
      CHECK(g == c.gpu(e.name));
      CHECK(g.peak_flops(Precision::bf16) > 0);
    }
    for (const auto& e : c.list("clusters")) {
      CAPTURE(e.id);
      ClusterSpec cl;
      CHECK_NOTHROW(cl = c.cluster(e.path));
      CHECK(cl == c.cluster(e.id));
      CHECK_FALSE(cl.gpu.name.empty());
      CHECK(cl.inter_node_GBps_per_gpu() > 0);
    }
  }
  SUBCASE("no two entries share a name or alias (a shared one would make lookups ambiguous)") {
    for (const auto& [kind_, sub] : kinds) {
      const auto& kind = kind_;
      CAPTURE(kind);
      std::map<std::string, std::string> owner;
      for (const auto& e : c.list(kind)) {
        std::set<std::string> mine{normalize_name(e.id), normalize_name(e.name)};
        for (const auto& a : e.aliases) mine.insert(normalize_name(a));
        for (const auto& n : mine) {
          const auto placed = owner.emplace(n, e.id);
          CHECK_MESSAGE(placed.second, n << " is used by both " << placed.first->second << " and " << e.id);
        }
      }
    }
  }
  CHECK(c.list("nonsense").empty());
}
}
