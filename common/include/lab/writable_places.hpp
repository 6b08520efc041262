/// @file writable_places.hpp
/// @brief Where any user may write on this machine: the one list both sides of a graded run use.
/// The checker gives each run a private, empty copy of every such folder (its sandbox), and
/// lesson 11's write audit lists them for files a process left outside the folder it was given.
#pragma once

#include <string>
#include <vector>

namespace lab {

/// @return /tmp, /dev/shm and every folder anyone may write (mode o+w, not a link) one level below
///         /, /var, /run, /dev, /srv, /opt, /home, /mnt and /media (/var/tmp, /run/lock, ...),
///         sorted. Scanned once per process: such folders are the system's, and only root makes one.
const std::vector<std::string>& world_writable_folders();

}  // namespace lab
