#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_util.h"

using strata::test::run_strata;

namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<std::string> nonempty_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

nlohmann::json runs_file() {
  std::ifstream in(strata::test::data_file("validation_runs_small.json"));
  return nlohmann::json::parse(in);
}

const std::string kRuns = "validate --runs '" + strata::test::data_file("validation_runs_small.json") + "'";

}  // namespace

TEST_SUITE("cli") {
TEST_CASE("strata validate") {
  SUBCASE("--json prints one object per run: id, iteration_time_s, tokens_per_sec_per_gpu, memory_per_gpu_GiB, error") {
    auto r = run_strata(kRuns + " --json");
    REQUIRE_MESSAGE(r.exit_code == 0, r.out);
    const nlohmann::json records = runs_file();
    auto lines = nonempty_lines(r.out);
    REQUIRE(lines.size() == records.size());
    for (std::size_t i = 0; i < lines.size(); ++i) {
      CAPTURE(lines[i]);
      nlohmann::json o;
      REQUIRE_NOTHROW(o = nlohmann::json::parse(lines[i]));
      REQUIRE(o.is_object());
      for (const char* key : {"id", "iteration_time_s", "tokens_per_sec_per_gpu", "memory_per_gpu_GiB", "error"})
        CHECK_MESSAGE(o.contains(key), key);
      CHECK(o["id"] == records[i]["id"]);
      if (o["error"].is_null()) {
        CHECK(o["iteration_time_s"].get<double>() > 0);
        // The full prediction agrees with the summary, and its stages hold the record's layers.
        REQUIRE(o.contains("prediction"));
        CHECK(o["prediction"]["iteration_time_s"] == o["iteration_time_s"]);
        int layers = 0;
        for (const auto& st : o["prediction"]["stages"]) {
          CHECK(st["forward_s"].get<double>() > 0);
          layers += st["layers"].get<int>();
        }
        CHECK(layers == records[i]["num_layers"].get<int>());
        CHECK(o["memory_per_gpu_GiB"].get<double>() > 0);
        // tokens/s/GPU x time x GPUs = global batch x sequence.
        const double tokens = records[i]["global_batch_size"].get<double>() * records[i]["seq_length"].get<double>();
        CHECK(o["tokens_per_sec_per_gpu"].get<double>() * o["iteration_time_s"].get<double>() * records[i]["num_gpus"].get<double>() ==
              doctest::Approx(tokens).epsilon(1e-9));
      } else {
        CHECK(o["error"].is_string());
        CHECK_FALSE(o["error"].get<std::string>().empty());
        CHECK(o["iteration_time_s"].is_null());
        CHECK(o["tokens_per_sec_per_gpu"].is_null());
      }
    }
    std::map<std::string, nlohmann::json> by_id;
    for (const auto& l : lines) {
      auto o = nlohmann::json::parse(l);
      by_id[o["id"].get<std::string>()] = o;
    }
    CHECK(by_id["sc21_gpt3_175b_like"]["error"].is_null());
    CHECK(by_id["mpt_fsdp_h100_per_node_link"]["error"].is_null());
    CHECK(has(by_id["num_gpus_mismatch"]["error"].get<std::string>(), "/num_gpus"));
    CHECK(has(by_id["missing_layers"]["error"].get<std::string>(), "/num_layers"));
    CHECK(has(by_id["tp_does_not_divide_heads"]["error"].get<std::string>(), "tp=5 does not divide the 24 attention heads"));
    CHECK_FALSE(by_id["tpu_cannot_predict"]["error"].is_null());
  }
  SUBCASE("the table ends with the MAPE lines, consistent with the --json predictions") {
    auto table = run_strata(kRuns);
    REQUIRE_MESSAGE(table.exit_code == 0, table.out);
    auto lines = nonempty_lines(table.out);
    REQUIRE(lines.size() >= 4);
    CHECK(has(lines.front(), "run"));
    CHECK(has(table.out, "cannot predict:"));
    CHECK(has(table.out, "MAPE of tokens/s/GPU by source group (bias: mean signed error"));
    CHECK(lines.back().starts_with("MAPE of memory per GPU: "));
    CHECK(has(lines.back(), "(1 runs)"));
    const std::string& overall = lines[lines.size() - 2];
    CHECK(has(overall, "overall"));
    CHECK(has(overall, "(3 runs)"));
    // Recompute the overall MAPE from the --json predictions and the file's measurements.
    auto js = run_strata(kRuns + " --json");
    const nlohmann::json records = runs_file();
    double sum = 0;
    int n = 0;
    for (const auto& l : nonempty_lines(js.out)) {
      auto o = nlohmann::json::parse(l);
      if (!o["error"].is_null()) continue;
      for (const auto& rec : records)
        if (rec["id"] == o["id"]) {
          nlohmann::json meas = rec.contains("meas_tokens_per_sec_per_gpu") && !rec["meas_tokens_per_sec_per_gpu"].is_null()
                                    ? rec["meas_tokens_per_sec_per_gpu"]
                                    : rec.value("derived_tokens_per_sec_per_gpu", nlohmann::json());
          if (meas.is_null()) continue;
          sum += std::fabs(o["tokens_per_sec_per_gpu"].get<double>() - meas.get<double>()) / meas.get<double>();
          ++n;
        }
    }
    REQUIRE(n == 3);
    std::istringstream words(overall);
    std::string label;
    double printed = -1;
    words >> label >> printed;
    CHECK(printed == doctest::Approx(100 * sum / n).epsilon(0.001).scale(0.05));
  }
  SUBCASE("runs whose record doubts its own throughput count, and the MAPE is also shown without them") {
    nlohmann::json records = runs_file();
    std::string doubted;
    for (auto& rec : records)
      if (rec.value("meas_tokens_per_sec_per_gpu", nlohmann::json()).is_number() && doubted.empty()) {
        rec["uncertain_fields"] = nlohmann::json::array({"meas_tokens_per_sec_per_gpu (throughput anomaly, see notes)"});
        doubted = rec["id"].get<std::string>();
      }
    REQUIRE_FALSE(doubted.empty());
    strata::test::TempFile file("runs_doubt.json", records.dump());
    auto table = run_strata("validate --runs '" + file.path() + "'");
    REQUIRE_MESSAGE(table.exit_code == 0, table.out);
    CHECK(has(table.out, "without the 1 run(s) whose record marks its measured throughput uncertain (uncertain_fields):"));
    // The first overall line still counts it; the second is the mean of the others' errors.
    auto js = run_strata("validate --runs '" + file.path() + "' --json");
    double sum = 0;
    int n = 0;
    for (const auto& l : nonempty_lines(js.out)) {
      auto o = nlohmann::json::parse(l);
      if (!o["error"].is_null()) continue;
      if (o["id"] == doubted) {
        CHECK(has(o["throughput_doubt"].get<std::string>(), "throughput anomaly"));
        continue;
      }
      CHECK_FALSE(o.contains("throughput_doubt"));
      for (const auto& rec : records)
        if (rec["id"] == o["id"]) {
          nlohmann::json meas = rec.value("meas_tokens_per_sec_per_gpu", nlohmann::json());
          if (meas.is_null()) meas = rec.value("derived_tokens_per_sec_per_gpu", nlohmann::json());
          if (meas.is_null()) continue;
          sum += std::fabs(o["tokens_per_sec_per_gpu"].get<double>() - meas.get<double>()) / meas.get<double>();
          ++n;
        }
    }
    REQUIRE(n == 2);
    std::vector<std::string> overall;
    for (const auto& l : nonempty_lines(table.out))
      if (has(l, "  overall ")) overall.push_back(l);
    REQUIRE(overall.size() == 2);
    CHECK(has(overall[0], "(3 runs)"));
    CHECK(has(overall[1], "(2 runs)"));
    std::istringstream words(overall[1]);
    std::string label;
    double printed = -1;
    words >> label >> printed;
    CHECK(printed == doctest::Approx(100 * sum / n).epsilon(0.001).scale(0.05));
  }
  SUBCASE("--explain prints the full report of one run with its assumptions") {
    auto r = run_strata(kRuns + " --explain mpt_fsdp_h100_per_node_link");
    CHECK(r.exit_code == 0);
    CHECK(has(r.out, "bottleneck "));
    CHECK(has(r.out, "assumption: micro_batch_size not published"));
    CHECK(has(r.out, "framework fsdp"));
    CHECK(has(r.out, "single-pass cross entropy"));  // llm-foundry: flash-attn's fused loss
    auto bad = run_strata(kRuns + " --explain no_such_run");
    CHECK(bad.exit_code == 1);
    CHECK(has(bad.out, "no run with id \"no_such_run\""));
  }
  SUBCASE("bad input") {
    auto r = run_strata("validate --runs /nonexistent/runs.json --json");
    CHECK(r.exit_code == 1);
    CHECK(has(r.out, "/nonexistent/runs.json: cannot open the file"));
    CHECK(run_strata("validate --json").exit_code == 1);  // --runs is required
    strata::test::TempFile obj("runs_obj.json", "{\"id\": 1}");
    r = run_strata("validate --runs '" + obj.path() + "' --json");
    CHECK(r.exit_code == 1);
    CHECK(has(r.out, "expected a JSON array of run records"));
  }
}
}
