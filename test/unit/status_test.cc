// Status codes, ToString / Message formatting and StatusOr.
#include "core/api/status.h"

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/support/builders.h"

namespace tidal {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(StatusTest, DefaultIsSuccessWithNothingAttached) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kSuccess);
  EXPECT_THAT(s.reasons(), IsEmpty());
  EXPECT_EQ(s.plugin(), "");
  EXPECT_EQ(s.ToString(), "Success");
  EXPECT_EQ(s.Message(), "");
  EXPECT_TRUE(Status::Ok().ok());
}

struct FactoryCase {
  std::string name;
  Status status;
  StatusCode code;
  std::string code_name;
};

class StatusFactoryTest : public ::testing::TestWithParam<FactoryCase> {};

TEST_P(StatusFactoryTest, CodeNameAndReason) {
  const auto& c = GetParam();
  EXPECT_EQ(c.status.code(), c.code);
  EXPECT_EQ(c.status.ok(), c.code == StatusCode::kSuccess);
  EXPECT_EQ(StatusCodeName(c.code), c.code_name);
  if (c.code != StatusCode::kSuccess) {
    EXPECT_THAT(c.status.reasons(), ElementsAre("why"));
    EXPECT_EQ(c.status.plugin(), "p");
    EXPECT_EQ(c.status.ToString(), c.code_name + " [p]: why");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Codes, StatusFactoryTest,
    ::testing::Values(FactoryCase{"Ok", Status::Ok(), StatusCode::kSuccess, "Success"},
                      FactoryCase{"Unschedulable", Status::Unschedulable("why", "p"), StatusCode::kUnschedulable,
                                  "Unschedulable"},
                      FactoryCase{"Unresolvable", Status::Unresolvable("why", "p"),
                                  StatusCode::kUnschedulableAndUnresolvable, "UnschedulableAndUnresolvable"},
                      FactoryCase{"Wait", Status::Wait("why", "p"), StatusCode::kWait, "Wait"},
                      FactoryCase{"Error", Status::Error("why", "p"), StatusCode::kError, "Error"}),
    tidal::testing::CaseName());

struct ToStringCase {
  std::string name;
  Status status;
  std::string to_string;
  std::string message;
};

class StatusToStringTest : public ::testing::TestWithParam<ToStringCase> {};

TEST_P(StatusToStringTest, Formats) {
  EXPECT_EQ(GetParam().status.ToString(), GetParam().to_string);
  EXPECT_EQ(GetParam().status.Message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Formats, StatusToStringTest,
    ::testing::Values(
        ToStringCase{"NoPluginOneReason", Status::Unschedulable("too big"), "Unschedulable: too big", "too big"},
        ToStringCase{"PluginNoReason", Status(StatusCode::kError, "", "gang"), "Error [gang]", ""},
        ToStringCase{"CodeOnly", Status(StatusCode::kWait, ""), "Wait", ""},
        ToStringCase{"TwoReasonsJoined", Status::Unschedulable("a", "topology").AddReason("b"),
                     "Unschedulable [topology]: a; b", "a; b"},
        ToStringCase{"ReasonAddedToEmpty", Status(StatusCode::kError, "").AddReason("only"), "Error: only", "only"},
        ToStringCase{"ThreeReasons", Status::Error("x").AddReason("y").AddReason("z"), "Error: x; y; z", "x; y; z"}),
    tidal::testing::CaseName());

TEST(StatusTest, EmptyReasonIsNotRecorded) {
  Status s(StatusCode::kUnschedulable, "");
  EXPECT_THAT(s.reasons(), IsEmpty());
  EXPECT_FALSE(s.ok());
}

TEST(StatusTest, WithPluginKeepsTheFirstPlugin) {
  Status s = Status::Unschedulable("r");
  s.WithPlugin("first").WithPlugin("second");
  EXPECT_EQ(s.plugin(), "first");
  Status t = Status::Unschedulable("r", "origin");
  t.WithPlugin("framework");
  EXPECT_EQ(t.plugin(), "origin");
}

TEST(StatusTest, AddReasonAppendsInOrder) {
  Status s = Status::Error("one");
  s.AddReason("two").AddReason("three");
  EXPECT_THAT(s.reasons(), ElementsAre("one", "two", "three"));
  EXPECT_EQ(s.code(), StatusCode::kError);
}

TEST(StatusTest, UnknownCodeHasAName) {
  EXPECT_EQ(StatusCodeName(static_cast<StatusCode>(99)), "Unknown");
}

TEST(StatusOrTest, HoldsValue) {
  StatusOr<int> v = 42;
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v.value(), 42);
  EXPECT_EQ(*v, 42);
  EXPECT_TRUE(v.status().ok());
  *v = 7;
  EXPECT_EQ(v.value(), 7);
}

TEST(StatusOrTest, HoldsStatus) {
  StatusOr<int> v = Status::Unschedulable("nope", "p");
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kUnschedulable);
  EXPECT_EQ(v.status().ToString(), "Unschedulable [p]: nope");
  EXPECT_THROW((void)v.value(), std::bad_variant_access);
}

TEST(StatusOrTest, ArrowAndMoveOut) {
  StatusOr<std::vector<std::string>> v = std::vector<std::string>{"a", "b"};
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->size(), 2u);
  v->push_back("c");
  std::vector<std::string> out = std::move(v).value();
  EXPECT_THAT(out, ElementsAre("a", "b", "c"));
}

// Copies share their reasons (a memoised refusal is copied into many decisions): changing a
// copy must leave the original and the other copies as they were.
TEST(StatusTest, CopiesAreIndependentValues) {
  const Status memo = Status::Unschedulable("no placement", "topology");
  Status a = memo;
  Status b = memo;
  a.AddReason("preemption proposed");
  Status empty_plugin = Status::Unschedulable("x");
  Status c = empty_plugin;
  c.WithPlugin("quota");
  EXPECT_EQ(memo.reasons(), std::vector<std::string>{"no placement"});
  EXPECT_EQ(b.Message(), "no placement");
  EXPECT_EQ(a.Message(), "no placement; preemption proposed");
  EXPECT_EQ(a.plugin(), "topology");
  EXPECT_EQ(empty_plugin.plugin(), "");
  EXPECT_EQ(c.plugin(), "quota");
  EXPECT_EQ(c.ToString(), "Unschedulable [quota]: x");
  Status ok;
  EXPECT_TRUE(ok.reasons().empty());
  EXPECT_EQ(ok.plugin(), "");
  ok.AddReason("note");  // a reason on a success value is kept, the code stays
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.Message(), "note");
}

TEST(StatusOrTest, MoveOnlyValue) {
  StatusOr<std::unique_ptr<int>> v = std::make_unique<int>(5);
  ASSERT_TRUE(v.ok());
  std::unique_ptr<int> p = std::move(v).value();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 5);
}

TEST(StatusOrTest, StringValueIsNotMistakenForStatus) {
  StatusOr<std::string> v = std::string("Error");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "Error");
  const StatusOr<std::string>& cv = v;
  EXPECT_EQ(cv->size(), 5u);
}

}  // namespace
}  // namespace tidal
