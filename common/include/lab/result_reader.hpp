/// @file result_reader.hpp
/// @brief The one reader of result files (docs/result-file.md), for the checker and the tests.
/// A result file is hostile input (the student's code runs in the process that wrote it), so it
/// is read with limits (size, nesting, numbers a double cannot hold) and every field the writer
/// writes is checked for its type, and numbers for a range, before anything uses it. Never throws
/// the JSON library's exceptions. Plain C++ (library lab_result), like lab/result.hpp.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lab/result.hpp"

namespace lab {

/// How deep arrays and objects may nest in a JSON file the course reads. Its own files nest
/// about 5 deep; the limit keeps the recursive copies and dumps of the JSON library off the end
/// of the stack on hostile files.
inline constexpr int kMaxJsonDepth = 64;

/// The largest result file read (the 2000 samples of each variant are far below it).
inline constexpr std::size_t kMaxResultBytes = 16u << 20;

/// The most variants a result file may hold (a lesson declares a dozen or so): judging a run
/// looks variants up by name, so their number bounds its time.
inline constexpr std::size_t kMaxResultVariants = 1000;

/// @brief Parses @p text as JSON, refusing nesting deeper than @p max_depth and numbers beyond a
/// double's range (1e400) before the JSON library sees them. Never throws.
/// @param text the document
/// @param error on failure, a phrase with the place, to follow the file's name: "is not valid
///        JSON (line 3, column 7)"
/// @param max_depth the deepest nesting accepted
/// @return the document, or nothing on failure
std::optional<nlohmann::json> parse_json_limited(std::string_view text, std::string& error,
                                                 int max_depth = kMaxJsonDepth);

/// @brief The structural check of a parsed result document: the schema, then every field the
/// writer writes, by type, numbers also by range (a rate, a count or a time no GPU produces), and
/// mode and role by name. Required: schema, lesson, nonce, variants, and in each variant name and
/// correct (and time_ms.median when it has time_ms); other fields may be missing (files from
/// before they were added). Then whether the readings agree with themselves: variant names
/// unique (at most kMaxResultVariants), a median within its min and max and within its samples,
/// as many samples as its time counts, a metric's value within its low and high. Fields the
/// checker adds, or unknown ones, are left alone.
/// @param doc the document
/// @return "" if it is valid, else why not, naming the field by its path ("variants[1].correct")
std::string validate_result(const nlohmann::json& doc);

/// @brief The reader of a lesson program's file: parse_json_limited, then validate_result, and
/// none of the keys only the checker writes into a run's document ("unverified_variants",
/// "counters", a variant's "pristine_error", ...): every value the checker reads from it has
/// been type-checked here.
/// @param text the file's content (at most kMaxResultBytes)
/// @param error on failure, a phrase to follow "the result file ": "is not valid JSON (line 1,
///        column 5)", "does not follow the result schema: \"variants\" is missing", ...
/// @return the valid document, or nothing on failure
std::optional<nlohmann::json> read_result(std::string_view text, std::string& error);

/// @param doc a valid document
/// @param name a variant's name
/// @return the variant called @p name, or nullptr
const nlohmann::json* find_variant(const nlohmann::json& doc, std::string_view name);

/// @param doc a valid document
/// @param variant one of its variants, timed
/// @return the variant's rates (lab::rates_of) from its bytes, flops, host_link and median time,
///         against the document's copy ceiling and the device's theoretical bandwidth; the rates
///         the file holds are not read, so no number judged can disagree with the others
Rates rates_of(const nlohmann::json& doc, const nlohmann::json& variant);

/// @param doc a valid document
/// @param variant one of its variants
/// @return how it was measured: its own mode, else the run's (config.mode), else cold
Mode mode_of(const nlohmann::json& doc, const nlohmann::json& variant);

}  // namespace lab
