// The exercise of a stand-in lesson program in the CLI tests: nothing, so the seal
// (inspect.hpp) has nothing to refuse when a test writes a <program>.objects for the stand-in.
namespace {
[[maybe_unused]] constexpr int kNothing = 0;
}  // namespace
