#pragma once
// How strata reads the free text of a published-run record (validation_runs.cpp): case-blind
// search, the years a stack's name or source gives, and the recipe knobs and Megatron flags that
// records quote, in any of the spellings published runs use. Internal to the formats library.

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace strata::record {

// `s` in lower case (ASCII letters).
std::string lower(std::string s);

// Whether `hay` contains `needle`, case-blind.
bool contains(const std::string& hay, const std::string& needle);

// The string a record gives under `key`, or "" when it gives none.
std::string text_of(const nlohmann::json& r, const char* key);

// The number a record gives under `key`, if it gives one.
std::optional<double> number_of(const nlohmann::json& r, const char* key);

// A count or rate read out of free text: digits only, within [lo, hi], else the record is rejected.
double number_in_text(const std::string& digits, double lo, double hi, const std::string& where, const char* key,
                      const std::string& text);

// Earliest four-digit year (19xx/20xx) mentioned in a text, or 0.
int year_in(const std::string& s);

// The year of an NGC container release named YY.MM ("NeMo 25.11 container", "Megatron-Bridge
// 26.04.01", "nvcr.io/nvidia/pytorch:24.07-py3", MLPerf's "ngc23.09"), or 0. The year follows the
// name after non-digits only, so no longer number ends in it.
int container_year(const std::string& s);

// The year a source was published, for records whose framework field gives none: a four-digit
// year, a venue tag ("SC21", "MICRO'24") or an arXiv identifier ("arXiv:2104.04473"). The
// earliest one found; 0 when there is none.
int publication_year(const std::string& s);

// A setting a record's free text quotes, in any of the spellings published runs use: a recipe
// knob (`"key": value`, `key=value`, `key: value`, `key = value`; quoted or not) or a Megatron flag
// (`--key-with-dashes value`, `--key-with-dashes=value`). A flag given without a value (the next
// word is another flag, or nothing) reads "true". Empty when the text does not name it.
std::optional<std::string> knob_string(const std::string& text, const std::string& key);

// A list-valued knob: `"key": ["a", "b"]`, `key=[a, b]`, or a Megatron flag and the words after it
// (`--key a b`, as many words as `item` accepts); its items separated by spaces, trimmed
// ("" for an empty list). A single value reads as a list of one. nullopt when the text does not name it.
std::optional<std::string> knob_list(const std::string& text, const std::string& key,
                                     const std::function<bool(const std::string&)>& item);

// The knob as a whole number (at most 6 digits), if stated as one.
std::optional<int> knob_int(const std::string& text, const std::string& key);

// The knob as a decimal number ("1.5"), if stated as one.
std::optional<double> knob_number(const std::string& text, const std::string& key);

// The knob as a truth value ("true"/"True"/"1", or a bare flag), if stated as one. A Megatron
// flag followed by prose ("--tp-comm-overlap and ...") is a switch: it is on.
std::optional<bool> knob_bool(const std::string& text, const std::string& key);

// Whether `text` says `phrase` without a negation just before it ("not force-balanced") or a
// negative value just after it ("fp8 attention: false", "force balance off").
bool says_unnegated(const std::string& text, const std::string& phrase);

}  // namespace strata::record
