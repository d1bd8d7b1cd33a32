#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "costmodel/json_reader.h"
#include "test_util.h"

using namespace strata;
using test::input_error;

TEST_SUITE("costmodel") {
TEST_CASE("JsonReader::get_string") {
  json j = {{"name", "gpt"}, {"n", 3}, {"nothing", nullptr}};
  JsonReader r(j, "model.json");
  SUBCASE("a string") { CHECK(r.get_string("name") == "gpt"); }
  SUBCASE("a number where a string is expected names the file, the path and the type found") {
    try {
      r.get_string("n");
      FAIL("no InputError");
    } catch (const InputError& e) {
      CHECK(e.where() == "model.json");
      CHECK(e.path() == "/n");
      CHECK(std::string(e.what()).find("expected a string, found a number") != std::string::npos);
    }
  }
  SUBCASE("a missing key and a null are both missing") {
    CHECK(input_error([&] { r.get_string("absent"); }).find("/absent: missing required key") != std::string::npos);
    CHECK(input_error([&] { r.get_string("nothing"); }).find("/nothing: missing required key") != std::string::npos);
    CHECK_FALSE(r.opt_string("absent").has_value());
    CHECK_FALSE(r.opt_string("nothing").has_value());
  }
}

TEST_CASE("JsonReader::get_bool") {
  json j = {{"yes", true}, {"word", "yes"}, {"one", 1}};
  JsonReader r(j, "f.json");
  CHECK(r.get_bool("yes"));
  CHECK(input_error([&] { r.get_bool("word"); }).find("/word: expected true or false, found a string") != std::string::npos);
  CHECK(input_error([&] { r.get_bool("one"); }).find("expected true or false, found a number") != std::string::npos);
  CHECK(r.opt_bool("absent", true));
  CHECK_FALSE(r.opt_bool("absent", false));
}

TEST_CASE("JsonReader::get_number") {
  // JSON text cannot hold NaN or infinity, but a json value built in code can.
  json j = {{"x", 2.5},
            {"nan", std::numeric_limits<double>::quiet_NaN()},
            {"inf", std::numeric_limits<double>::infinity()},
            {"s", "2.5"},
            {"arr", json::array({1, 2})}};
  JsonReader r(j, "f.json");
  CHECK(r.get_number("x") == 2.5);
  CHECK(input_error([&] { r.get_number("nan"); }).find("/nan: expected a finite number") != std::string::npos);
  CHECK(input_error([&] { r.get_number("inf"); }).find("/inf: expected a finite number") != std::string::npos);
  CHECK(input_error([&] { r.get_number("s"); }).find("/s: expected a number, found a string") != std::string::npos);
  CHECK(input_error([&] { r.get_number("arr"); }).find("expected a number, found an array") != std::string::npos);
  CHECK_FALSE(r.opt_number("absent").has_value());
}

TEST_CASE("JsonReader::get_int") {
  json j = json::parse(R"({"i": 7, "whole_float": 3.0, "frac": 2.5, "neg": -4, "huge": 1e30, "big_int": 9007199254740993,
                           "str": "7"})");
  JsonReader r(j, "f.json");
  SUBCASE("integers and floats with no fractional part are accepted") {
    CHECK(r.get_int("i", 1, 10) == 7);
    CHECK(r.get_int("whole_float", 1, 10) == 3);
    CHECK(r.get_int("neg", -10, 10) == -4);
    // Integers beyond 2^53 keep their exact value (not rounded through a double).
    CHECK(r.get_int("big_int", 0, std::numeric_limits<std::int64_t>::max()) == 9007199254740993LL);
  }
  SUBCASE("a float with a fractional part is rejected, quoting it") {
    CHECK(input_error([&] { r.get_int("frac", 1, 10); }).find("/frac: expected an integer, found 2.5") != std::string::npos);
  }
  SUBCASE("numbers out of range give the range") {
    CHECK(input_error([&] { r.get_int("i", 8, 10); }).find("expected an integer in [8, 10], found 7") != std::string::npos);
    CHECK(input_error([&] { r.get_int("neg", 1, 10); }).find("/neg: expected an integer in [1, 10]") != std::string::npos);
    CHECK(input_error([&] { r.get_int("huge", 1, 1000000); }).find("/huge: expected an integer in [1, 1000000]") != std::string::npos);
  }
  SUBCASE("a string is not an integer") {
    CHECK(input_error([&] { r.get_int("str", 1, 10); }).find("/str: expected an integer, found a string") != std::string::npos);
  }
  SUBCASE("optional") {
    CHECK_FALSE(r.opt_int("absent", 1, 10).has_value());
    CHECK(r.opt_int("i", 1, 10).value() == 7);
  }
}

TEST_CASE("JsonReader::get_positive") {
  json j = {{"zero", 0}, {"neg", -1.5}, {"ok", 80.0}, {"big", 2e6}};
  JsonReader r(j, "gpu.json");
  CHECK(r.get_positive("ok", 1e5) == 80.0);
  CHECK(input_error([&] { r.get_positive("zero", 1e5); }).find("/zero: expected a positive number") != std::string::npos);
  CHECK(input_error([&] { r.get_positive("neg", 1e5); }).find("found -1.5") != std::string::npos);
  CHECK(input_error([&] { r.get_positive("big", 1e5); }).find("no larger than") != std::string::npos);
  CHECK_FALSE(r.opt_positive("absent", 1).has_value());
}

TEST_CASE("JsonReader::opt_string_list") {
  json j = json::parse(R"({"aliases": ["a", 2, "c"], "notlist": "a", "ok": ["x", "y"]})");
  JsonReader r(j, "f.json");
  CHECK(r.opt_string_list("ok") == std::vector<std::string>{"x", "y"});
  CHECK(r.opt_string_list("absent").empty());
  // The failing element is named by its index.
  CHECK(input_error([&] { r.opt_string_list("aliases"); }).find("/aliases/1: expected a string, found a number") != std::string::npos);
  CHECK(input_error([&] { r.opt_string_list("notlist"); }).find("expected an array of strings") != std::string::npos);
}

TEST_CASE("JsonReader::child") {
  json j = json::parse(R"({"moe": {"top_k": "two"}, "flat": 3})");
  JsonReader r(j, "model.json");
  SUBCASE("errors inside a child carry the nested JSON path") {
    JsonReader c = r.child("moe");
    std::string msg = input_error([&] { c.get_int("top_k", 1, 8); });
    CHECK(msg.find("model.json: /moe/top_k: expected an integer") != std::string::npos);
    CHECK(input_error([&] { c.get_int("num_experts", 1, 8); }).find("/moe/num_experts: missing required key") != std::string::npos);
  }
  SUBCASE("a non-object child is rejected") {
    CHECK(input_error([&] { r.child("flat"); }).find("/flat: expected an object, found a number") != std::string::npos);
  }
  SUBCASE("a reader over a non-object names the root") {
    json arr = json::array();
    CHECK(input_error([&] { JsonReader bad(arr, "x.json"); }).find("x.json: /: expected a JSON object, found an array") !=
          std::string::npos);
  }
}

TEST_CASE("JsonReader::reject_unknown_keys") {
  SUBCASE("a typo gets a did-you-mean") {
    json j = {{"num_layer", 3}};
    JsonReader r(j, "model.json");
    std::string msg = input_error([&] { r.reject_unknown_keys({"num_layers", "hidden_size"}); });
    CHECK(msg.find("model.json: /num_layer: unknown key") != std::string::npos);
    CHECK(msg.find("did you mean \"num_layers\"?") != std::string::npos);
  }
  SUBCASE("an unrelated key gets no suggestion") {
    json j = {{"completely_different", 3}};
    JsonReader r(j, "model.json");
    std::string msg = input_error([&] { r.reject_unknown_keys({"num_layers", "hidden_size"}); });
    CHECK(msg.find("unknown key") != std::string::npos);
    CHECK(msg.find("did you mean") == std::string::npos);
  }
  SUBCASE("known keys pass") {
    json j = {{"num_layers", 3}};
    JsonReader r(j, "model.json");
    CHECK_NOTHROW(r.reject_unknown_keys({"num_layers", "hidden_size"}));
  }
}

TEST_CASE("closest_match") {
  const std::vector<std::string> keys = {"num_layers", "hidden_size", "num_attention_heads", "vocab_size"};
  CHECK(closest_match("hiden_size", keys) == "hidden_size");
  CHECK(closest_match("num_layer", keys) == "num_layers");
  CHECK(closest_match("vocab_sise", keys) == "vocab_size");
  // Exact match is its own closest.
  CHECK(closest_match("vocab_size", keys) == "vocab_size");
  // Too far (more than max(2, len/3) edits): no suggestion.
  CHECK(closest_match("xyz", keys) == "");
  CHECK(closest_match("learning_rate", keys) == "");
  CHECK(closest_match("anything", {}) == "");
  // The threshold: a 3-letter word accepts 2 edits, not 3.
  CHECK(closest_match("abc", {"axy"}) == "axy");
  CHECK(closest_match("abc", {"xyz"}) == "");
}

TEST_CASE("load_json_file") {
  SUBCASE("a valid file") {
    test::TempFile f("ok.json", R"({"a": [1, 2]})");
    CHECK(load_json_file(f.path())["a"][1] == 2);
  }
  auto check_error = [](const std::string& path, const std::string& fragment) {
    try {
      load_json_file(path);
      FAIL("no InputError for " << path);
    } catch (const InputError& e) {
      CHECK(e.where() == path);
      CHECK(std::string(e.what()).find(path) != std::string::npos);
      CHECK_MESSAGE(std::string(e.what()).find(fragment) != std::string::npos, e.what());
    }
  };
  SUBCASE("empty and whitespace-only files") {
    test::TempFile empty("empty.json", "");
    check_error(empty.path(), "the file is empty");
    test::TempFile blank("blank.json", " \n\t\r\n");
    check_error(blank.path(), "the file is empty");
  }
  SUBCASE("truncated JSON") {
    test::TempFile f("trunc.json", R"({"num_layers": 96, "hidden)");
    check_error(f.path(), "not valid JSON");
  }
  SUBCASE("non-UTF-8 bytes") {
    test::TempFile f("latin1.json", std::string("{\"name\": \"caf\xe9\"}"));
    check_error(f.path(), "not valid JSON");
  }
  SUBCASE("a missing file") {
    check_error("/nonexistent/dir/none.json", "cannot open");
  }
}

TEST_CASE("parse_json_text") {
  CHECK(parse_json_text("[1]", "inline").size() == 1);
  CHECK(input_error([] { parse_json_text("", "runs.json"); }).find("runs.json: the file is empty") != std::string::npos);
  CHECK(input_error([] { parse_json_text("{,}", "runs.json"); }).find("runs.json: not valid JSON (parse error") !=
        std::string::npos);
}

TEST_CASE("parse_json_text: Python's non-finite floats outside strings read as null") {
  const json j = parse_json_text(R"({"limit": [0.0, Infinity], "low": -Infinity, "x": NaN, "s": "Infinity \" NaN", "n": 1})", "c.json");
  CHECK(j["limit"][0] == 0.0);
  CHECK(j["limit"][1].is_null());
  CHECK(j["low"].is_null());
  CHECK(j["x"].is_null());
  CHECK(j["s"] == "Infinity \" NaN");
  CHECK(j["n"] == 1);
  // Another error in the same text is still reported as the text's.
  CHECK(input_error([] { parse_json_text(R"({"a": Infinity,})", "c.json"); }).find("c.json: not valid JSON") != std::string::npos);
}

TEST_CASE("JsonReader::get_int: 2^63 is out of the int64 range") {
  // double(INT64_MAX) rounds up to 2^63: the range check must compare integers exactly.
  json j = json::parse(R"({"x": 9223372036854775808})");
  JsonReader r(j, "f.json");
  CHECK_THROWS_AS(r.get_int("x", 0, std::numeric_limits<std::int64_t>::max()), InputError);
}

TEST_CASE("load_json_file: a directory is not reported as an empty file") {
  // A directory opens and reads as no bytes; it must be named as a directory (`--plan /tmp`).
  const std::string dir = std::filesystem::temp_directory_path().string();
  CHECK(input_error([&] { load_json_file(dir); }).find("empty") == std::string::npos);
  CHECK_THROWS_AS(load_json_file(dir), InputError);
}
}
