// Config versions and document diffs (core/io/document_diff.h): a version ignores formatting and
// key order but no value; the diff names every changed, added and removed field by path.
#include <gtest/gtest.h>

#include "core/io/document.h"
#include "core/io/document_diff.h"

namespace tidal {
namespace {

nlohmann::json Doc(const std::string& text) { return ParseDocument(text).value().root; }

TEST(DocumentVersion, SameConfigSameVersionWhateverTheFormatAnyValueChangesIt) {
  const auto yaml = Doc("# comment\nqueues:\n  - {name: a, weight: 2}\n");
  const auto json = Doc(R"({"queues": [{"weight": 2, "name": "a"}]})");
  EXPECT_EQ(DocumentVersion(yaml), DocumentVersion(json));
  EXPECT_EQ(DocumentVersion(yaml).size(), 16u);
  EXPECT_NE(DocumentVersion(yaml), DocumentVersion(Doc("queues:\n  - {name: a, weight: 3}\n")));
  EXPECT_NE(DocumentVersion(yaml), DocumentVersion(Doc("queues:\n  - {name: a, weight: \"2\"}\n")))
      << "a quoted scalar is a string: another value";
  EXPECT_NE(BytesVersion("queues: [\n"), BytesVersion("queues: [[\n"));
}

TEST(DiffDocuments, NamesChangedAddedAndRemovedFieldsByPath) {
  const auto a = Doc("queues:\n  - {name: a, weight: 2}\n  - {name: b}\npools:\n  slurm: {idleSeconds: 60}\n");
  const auto b = Doc("queues:\n  - {name: a, weight: 5}\npools:\n  slurm: {idleSeconds: 60, keep: 1}\nperishable: {fill: none}\n");
  const auto d = DiffDocuments(a, b);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].path, "perishable");
  EXPECT_TRUE(d[0].left_absent);
  EXPECT_EQ(d[1].path, "pools.slurm.keep");
  EXPECT_EQ(d[1].right, 1);
  EXPECT_EQ(d[2].path, "queues[0].weight");
  EXPECT_EQ(d[2].left, 2);
  EXPECT_EQ(d[2].right, 5);
  EXPECT_EQ(d[3].path, "queues[1]");
  EXPECT_TRUE(d[3].right_absent);
  EXPECT_TRUE(DiffDocuments(a, a).empty());
  const auto whole = DiffDocuments(nlohmann::json(1), nlohmann::json("x"));
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].path, "");
}

}  // namespace
}  // namespace tidal
