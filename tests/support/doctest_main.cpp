// main() for the unit test executables (lab_add_doctest without GPU): plain doctest.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
