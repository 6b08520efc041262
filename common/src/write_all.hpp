// Writing a whole text to a descriptor (private to the library): the record's stream and the
// result file's whole-file write both need it.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <string>

namespace lab {

// All of @p text to @p fd (write(2) may take less than asked); false on an error (errno says).
inline bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace lab
