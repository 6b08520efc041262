// The one reader of the checker's TOML files (check.toml, overrides, a lesson's expected.toml).
#pragma once

#include <filesystem>

#if __has_include(<toml++/toml.hpp>)
#include <toml++/toml.hpp>
#else
#include <toml++/toml.h>
#endif

namespace lab {

/// Reads and parses @p file within the limits every TOML file of the checker gets: a regular
/// file (not a FIFO or a device) of at most 1 MiB, and at most 2000 dotted key parts (toml++
/// frees nested tables recursively). Throws ConfigError ("file:line: what is wrong").
toml::table parse_toml(const std::filesystem::path& file);

}  // namespace lab
