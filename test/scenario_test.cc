// Runs every test/scenarios/*.yaml through the scenario harness, one named test per file.
#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "test/support/scenario.h"

namespace tidal::testing {
namespace {

std::vector<std::string> ScenarioFiles() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(TIDAL_SOURCE_DIR) + "/test/scenarios")) {
    if (e.path().extension() == ".yaml" || e.path().extension() == ".json") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class ScenarioTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ScenarioTest, MeetsExpectations) {
  const ScenarioReport rep = RunScenarioFile(GetParam());
  for (const auto& f : rep.failures) ADD_FAILURE() << f;
  if (!rep.failures.empty()) std::cerr << "decisions:\n" << rep.table;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, ScenarioTest, ::testing::ValuesIn(ScenarioFiles()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string n = std::filesystem::path(param_info.param).stem().string();
                           std::replace_if(n.begin(), n.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
                           return n;
                         });

TEST(ScenarioSuite, HasScenarios) { EXPECT_GE(ScenarioFiles().size(), 6u); }

}  // namespace
}  // namespace tidal::testing
