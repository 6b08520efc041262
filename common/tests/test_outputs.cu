// lab::OutputsCheck without a GPU: several outputs of one call judged as one check, the first
// output that differs deciding, guard zones read only once every output is right. Outputs read
// from lab::GuardedBuffers (by name, all or at places): test_gpu.cu.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "lab/harness.hpp"
#include "lab/outputs.cuh"
#include "lab/variant.hpp"

namespace {

struct Problem {};

// A lesson with one baseline variant, "given", whose checks the tests read back.
struct Fixture {
  lab::Lesson lesson{"99-test", "outputs"};
  lab::Variants<Problem> variants{lesson};
  Fixture() {
    variants.add({"given", lab::Role::Baseline, "a given", [](Problem&, cudaStream_t) {},
                  [](const Problem&) { return lab::Work{1, 1}; }});
  }
  // A look at the variant's outputs after a validated call, recorded under @p case_name.
  lab::Look look(const std::string& case_name) {
    return lab::Look(lesson, "given", case_name, 1, nullptr, nullptr);
  }
  const std::vector<lab::CheckResult>& checks() const {
    return lesson.result().variants.at(0).checks;
  }
};

const lab::Tolerance kExact{0.0, 0.0};
using Floats = std::vector<float>;

}  // namespace

TEST_CASE("outputs that are all right and intact guards make one passing check") {
  Fixture f;
  lab::OutputsCheck o(f.look("10x3"));
  o.compare("mean", [] { return Floats{1, 2}; }, Floats{1, 2}, kExact)
      .compare("score", [] { return Floats{3}; }, Floats{3}, kExact, {7});
  o.guard("").guard("");
  const lab::Comparison c = o.record();
  CHECK(c.ok);
  REQUIRE(f.checks().size() == 1);
  CHECK(f.checks()[0].name == "10x3");
  CHECK(f.checks()[0].ok);
}

TEST_CASE("the first output that differs decides, names itself, and nothing after it is read") {
  Fixture f;
  bool later_read = false;
  lab::OutputsCheck o(f.look("10x3"));
  o.compare("mean", [] { return Floats{1, 2}; }, Floats{1, 2}, kExact)
      .compare("score", [] { return Floats{3, 5}; }, Floats{3, 4}, kExact, {7, 9})
      .compare("inv_std", [&] {
        later_read = true;
        return Floats{1};
      }, Floats{2}, kExact);
  o.guard("wrote past the end of mean");  // not kept: an output already differs
  const lab::Comparison c = o.record();
  CHECK_FALSE(later_read);
  CHECK_FALSE(c.ok);
  REQUIRE(f.checks().size() == 1);
  CHECK_FALSE(f.checks()[0].ok);
  // the score's own index (9), not the position among the checked values (1)
  CHECK(f.checks()[0].message == "score: 1 of 2 elements differ; first at [9]: got 5, expected 4");
}

TEST_CASE("right outputs with a changed guard zone fail with the first zone's damage") {
  Fixture f;
  int buffers_read = 0;
  lab::OutputsCheck o(f.look("2x1"));
  o.compare("mean", [] { return Floats{1}; }, Floats{1}, kExact);
  o.guard("").guard("wrote past the end of score").guard("wrote past the end of workspace");
  CHECK_FALSE(o.ok());
  o.compare("late", [&] {
    ++buffers_read;
    return Floats{0};
  }, Floats{0}, kExact);
  const lab::Comparison c = o.record();
  CHECK(buffers_read == 0);
  CHECK_FALSE(c.ok);
  CHECK(c.note == "wrote past the end of score");
  REQUIRE(f.checks().size() == 1);
  CHECK_FALSE(f.checks()[0].ok);
  CHECK(f.checks()[0].message == "wrote past the end of score");
}
