// An output compared bit for bit with a device reference (lab/same_bits.cuh). Without a GPU: the
// message. With one: the comparison itself, the first difference and the guard zone.
#include <doctest/doctest.h>

#include <string>

#include "lab/same_bits.cuh"

TEST_CASE("two arrays that differ are said with the count, the first index and both values") {
  lab::Changed c;
  c.count = 3;
  c.first = 17;
  CHECK(lab::bits_differ_message(c, 4096, 1.0f, -2.5f) ==
        "3 of 4096 differ; first at [17]: got 1.000000, expected -2.500000 (bit for bit)");
}
