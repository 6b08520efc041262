/// @file format.hpp
/// @brief Numbers into text for a lesson's notes and sizes: printf formats into std::string.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

namespace lab {

/// @brief printf into a string (at most 511 characters; longer text is cut).
/// @param format a printf format
/// @return the formatted text
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
inline std::string text(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

/// @param value a number
/// @param digits digits after the decimal point
/// @return e.g. fixed(2.345, 2) == "2.35"
inline std::string fixed(double value, int digits) { return text("%.*f", digits, value); }

/// @param extents a shape's extents
/// @return them joined by 'x', e.g. dims({1000, 777}) == "1000x777"
inline std::string dims(std::initializer_list<long long> extents) {
  std::string out;
  for (long long e : extents) out += (out.empty() ? "" : "x") + std::to_string(e);
  return out;
}

/// @overload
/// @param extents a shape's extents (a validation case, lab::Shape)
/// @return them joined by 'x'
inline std::string dims(const std::vector<int>& extents) {
  std::string out;
  for (int e : extents) out += (out.empty() ? "" : "x") + std::to_string(e);
  return out;
}

}  // namespace lab
