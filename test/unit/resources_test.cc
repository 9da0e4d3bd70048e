// Resources: ParseQuantity, CopiesOf, ToString and the arithmetic helpers.
#include "core/api/resources.h"

#include <cstdint>
#include <limits>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/support/builders.h"

namespace tidal {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kKi = 1024;
constexpr int64_t kMi = kKi * 1024;
constexpr int64_t kGi = kMi * 1024;
constexpr int64_t kTi = kGi * 1024;
constexpr int64_t kPi = kTi * 1024;

struct QuantityCase {
  std::string name;
  std::string text;
  bool milli;
  bool ok;
  int64_t value;      // when ok
  std::string error;  // substring, when !ok
};

class ParseQuantityTest : public ::testing::TestWithParam<QuantityCase> {};

TEST_P(ParseQuantityTest, Parses) {
  const auto& c = GetParam();
  auto q = ParseQuantity(c.text, c.milli, "workloads[2].request.cpu");
  ASSERT_EQ(q.ok(), c.ok) << (q.ok() ? std::to_string(*q) : q.status().ToString());
  if (c.ok) {
    EXPECT_EQ(*q, c.value);
  } else {
    EXPECT_EQ(q.status().code(), StatusCode::kError);
    EXPECT_THAT(q.status().Message(), HasSubstr(c.error));
    // Errors name the field and quote the text.
    EXPECT_THAT(q.status().Message(),
                ::testing::StartsWith("workloads[2].request.cpu: invalid quantity \"" + c.text + "\""));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseQuantityTest,
    ::testing::Values(
        QuantityCase{"PlainInteger", "8", false, true, 8, ""},
        QuantityCase{"PlainIntegerMilli", "8", true, true, 8000, ""},
        QuantityCase{"Zero", "0", false, true, 0, ""},
        QuantityCase{"MilliSuffixAsMilli", "500m", true, true, 500, ""},
        QuantityCase{"MilliSuffixWholeUnitsRoundUp", "500m", false, true, 1, ""},
        QuantityCase{"MilliSuffixExactWhole", "2000m", false, true, 2, ""},
        QuantityCase{"DecimalMilli", "1.5", true, true, 1500, ""},
        QuantityCase{"DecimalWholeRoundsUp", "1.5", false, true, 2, ""},
        QuantityCase{"DecimalExact", "2.0", false, true, 2, ""},
        QuantityCase{"LeadingDot", ".5", true, true, 500, ""},
        QuantityCase{"TrailingDot", "5.", false, true, 5, ""},
        QuantityCase{"QuarterCpu", "0.25", true, true, 250, ""},
        QuantityCase{"Gibibytes", "512Gi", false, true, 512 * kGi, ""},
        QuantityCase{"FractionalGibibytes", "1.5Gi", false, true, 3 * kGi / 2, ""},
        QuantityCase{"Kibibytes", "1Ki", false, true, kKi, ""},
        QuantityCase{"Mebibytes", "100Mi", false, true, 100 * kMi, ""},
        QuantityCase{"Tebibytes", "1Ti", false, true, kTi, ""},
        QuantityCase{"Pebibytes", "2Pi", false, true, 2 * kPi, ""},
        QuantityCase{"DecimalGiga", "1G", false, true, 1000000000, ""},
        QuantityCase{"DecimalKiloLower", "2k", false, true, 2000, ""},
        QuantityCase{"DecimalKiloUpper", "2K", false, true, 2000, ""},
        QuantityCase{"DecimalMega", "3M", false, true, 3000000, ""},
        QuantityCase{"DecimalTera", "1T", false, true, 1000000000000, ""},
        QuantityCase{"DecimalPeta", "1P", false, true, 1000000000000000, ""},
        QuantityCase{"GigaAsMilli", "1k", true, true, 1000000, ""},
        QuantityCase{"BadSuffix", "8x", false, false, 0, "unknown suffix \"x\""},
        QuantityCase{"BadSuffixLowerGi", "8gi", false, false, 0, "unknown suffix \"gi\""},
        QuantityCase{"BadSuffixBytes", "8GiB", false, false, 0, "unknown suffix \"GiB\""},
        QuantityCase{"SpaceBeforeSuffix", "8 Gi", false, false, 0, "unknown suffix \" Gi\""},
        QuantityCase{"Exponent", "1e3", false, false, 0, "unknown suffix \"e3\""},
        QuantityCase{"Empty", "", false, false, 0, "empty"},
        QuantityCase{"Negative", "-1", false, false, 0, "expected a non-negative number"},
        QuantityCase{"NegativeMilli", "-500m", true, false, 0, "expected a non-negative number"},
        QuantityCase{"TwoDots", "1..2", false, false, 0, "more than one decimal point"},
        QuantityCase{"TwoSeparateDots", "1.2.3", false, false, 0, "more than one decimal point"},
        QuantityCase{"OnlyDot", ".", false, false, 0, "expected a non-negative number"},
        QuantityCase{"OnlySuffix", "Gi", false, false, 0, "expected a non-negative number"},
        QuantityCase{"TooLargeSuffix", "10000P", false, false, 0, "too large"},
        QuantityCase{"TooLargeMilli", "10P", true, false, 0, "too large"},
        // A digit string beyond double's range must be an error, not an exception.
        QuantityCase{"TooManyDigits", std::string(400, '9'), false, false, 0, "too large"}),
    tidal::testing::CaseName());

TEST(ParseQuantityTest, FullErrorMessage) {
  auto q = ParseQuantity("8x", false, "f");
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().Message(),
            "f: invalid quantity \"8x\": unknown suffix \"x\" (accepted: m, k, M, G, T, P, Ki, Mi, Gi, Ti, Pi)");
}

struct CopiesCase {
  std::string name;
  Resources have;
  Resources req;
  int64_t copies;
};

class CopiesOfTest : public ::testing::TestWithParam<CopiesCase> {};

TEST_P(CopiesOfTest, Counts) {
  EXPECT_EQ(GetParam().have.CopiesOf(GetParam().req), GetParam().copies);
}

INSTANTIATE_TEST_SUITE_P(
    Table, CopiesOfTest,
    ::testing::Values(
        CopiesCase{"GpuBound", {8, 64000, 512 * kGi}, {1, 0, 0}, 8},
        CopiesCase{"GpuBoundRoundsDown", {8, 64000, 512 * kGi}, {3, 0, 0}, 2},
        CopiesCase{"CpuBound", {8, 4000, 512 * kGi}, {1, 1000, 0}, 4},
        CopiesCase{"MemoryBound", {8, 64000, 10 * kGi}, {1, 1000, 4 * kGi}, 2},
        CopiesCase{"TightestComponentWins", {8, 3000, 100 * kGi}, {2, 500, 50 * kGi}, 2},
        CopiesCase{"DoesNotFit", {4, 64000, 512 * kGi}, {8, 0, 0}, 0},
        CopiesCase{"ExactFit", {8, 8000, 8 * kGi}, {8, 8000, 8 * kGi}, 1},
        CopiesCase{"OvercommittedHasNoRoom", {-2, 64000, 512 * kGi}, {1, 0, 0}, 0},
        CopiesCase{"OvercommittedUnrequestedComponentIgnored", {8, -1000, 512 * kGi}, {1, 0, 0}, 8},
        CopiesCase{"GpuLessRequest", {0, 8000, 0}, {0, 1000, 0}, 8},
        CopiesCase{"ZeroRequestIsMany", {0, 0, 0}, {0, 0, 0}, std::numeric_limits<int32_t>::max()}),
    tidal::testing::CaseName());

struct ToStringCase {
  std::string name;
  Resources r;
  std::string text;
};

class ResourcesToStringTest : public ::testing::TestWithParam<ToStringCase> {};

TEST_P(ResourcesToStringTest, Formats) { EXPECT_EQ(GetParam().r.ToString(), GetParam().text); }

INSTANTIATE_TEST_SUITE_P(
    Table, ResourcesToStringTest,
    ::testing::Values(ToStringCase{"Typical", {8, 64000, 512 * kGi}, "8 GPU, 64 CPU, 512Gi"},
                      ToStringCase{"MilliCpu", {1, 500, 1536 * kMi}, "1 GPU, 500m CPU, 1536Mi"},
                      ToStringCase{"FractionalCpu", {0, 1500, kKi}, "0 GPU, 1500m CPU, 1Ki"},
                      ToStringCase{"Zero", {0, 0, 0}, "0 GPU, 0 CPU, 0"},
                      ToStringCase{"OddBytes", {2, 1000, 1025}, "2 GPU, 1 CPU, 1025"},
                      ToStringCase{"DecimalBytesStayPlain", {0, 0, 1000}, "0 GPU, 0 CPU, 1000"},
                      ToStringCase{"Tebibytes", {0, 0, kTi}, "0 GPU, 0 CPU, 1Ti"},
                      ToStringCase{"LargestUnitIsPi", {0, 0, 1024 * kPi}, "0 GPU, 0 CPU, 1024Pi"}),
    tidal::testing::CaseName());

TEST(ResourcesTest, Arithmetic) {
  const Resources a{8, 64000, 512 * kGi};
  const Resources b{2, 1000, kGi};
  EXPECT_EQ(a + b, (Resources{10, 65000, 513 * kGi}));
  EXPECT_EQ(a - b, (Resources{6, 63000, 511 * kGi}));
  EXPECT_EQ(b * 3, (Resources{6, 3000, 3 * kGi}));
  EXPECT_NE(a, b);
  Resources c = a;
  c -= a;
  EXPECT_TRUE(c.IsZero());
  c -= b;
  EXPECT_TRUE(c.AnyNegative());
  EXPECT_FALSE(a.AnyNegative());
  EXPECT_FALSE(b.IsZero());
}

TEST(ResourcesTest, Covers) {
  const Resources have{8, 4000, 10 * kGi};
  EXPECT_TRUE(have.Covers({8, 4000, 10 * kGi}));
  EXPECT_TRUE(have.Covers({}));
  EXPECT_FALSE(have.Covers({9, 0, 0}));
  EXPECT_FALSE(have.Covers({0, 4001, 0}));
  EXPECT_FALSE(have.Covers({0, 0, 10 * kGi + 1}));
}

TEST(ResourcesTest, FormatHelpers) {
  EXPECT_EQ(FormatMilli(250), "250m");
  EXPECT_EQ(FormatMilli(3000), "3");
  EXPECT_EQ(FormatBytes(3 * kMi), "3Mi");
  EXPECT_EQ(FormatBytes(kMi + 1), std::to_string(kMi + 1));
}


// GPUs are whole devices (regression: 0.5, 1.5 and 100m were rounded up without a word).
TEST(ParseGpuQuantityTest, WholeCountsOnly) {
  EXPECT_EQ(*ParseGpuQuantity("8", "g"), 8);
  EXPECT_EQ(*ParseGpuQuantity("3000m", "g"), 3);
  EXPECT_EQ(*ParseGpuQuantity("2k", "g"), 2000);
  for (const char* frac : {"0.5", "1.5", "100m", "1500m"}) {
    auto q = ParseGpuQuantity(frac, "queues[0].nominal.gpus");
    ASSERT_FALSE(q.ok()) << frac;
    EXPECT_EQ(q.status().Message(), std::string("queues[0].nominal.gpus: ") + frac +
                                        " is not a whole number of GPUs (GPUs are whole devices)");
  }
  EXPECT_THAT(ParseGpuQuantity("8x", "g").status().Message(), HasSubstr("unknown suffix"));
  EXPECT_THAT(ParseGpuQuantity("9223372036854775807", "g").status().Message(), HasSubstr("too large"));
}

// A number read from YAML (regression: 1e20 was printed as "1e+20" and refused as a suffix).
TEST(QuantityFromNumberTest, RangeAndUnits) {
  EXPECT_EQ(*QuantityFromNumber(1000.0, /*milli=*/true, /*gpus=*/false, "cpu"), 1000000);
  EXPECT_EQ(*QuantityFromNumber(0.5, true, false, "cpu"), 500);
  EXPECT_EQ(*QuantityFromNumber(10.0, false, true, "gpus"), 10);
  EXPECT_EQ(QuantityFromNumber(1e20, false, true, "gpus").status().Message(), "gpus: invalid quantity \"1e+20\": too large");
  EXPECT_EQ(QuantityFromNumber(1e17, true, false, "cpu").status().Message(), "cpu: invalid quantity \"1e+17\": too large");
  EXPECT_THAT(QuantityFromNumber(0.5, false, true, "gpus").status().Message(), HasSubstr("not a whole number of GPUs"));
}

}  // namespace
}  // namespace tidal
