//===- PlacementAttrTest.cpp - #bitpipe.placement helpers -----------------===//
//
// The replica groups and chunks of BitPipe's placement, against the table in
// docs/bitpipe-order.md ("Placement").
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/BitPipe/IR/BitPipeAttrs.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Schedule/Placement.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace bitpipe::bp;
using bitpipe::sched::PlacementKind;

namespace {

class PlacementAttrTest : public ::testing::Test {
protected:
  PlacementAttrTest() { context.loadDialect<BitPipeDialect>(); }

  PlacementAttr parse(StringRef text) {
    return llvm::dyn_cast_or_null<PlacementAttr>(
        parseAttribute(text, &context));
  }

  /// BitPipe on D devices: down is s(r) then s(2D-1-r) on device r, up is
  /// its mirror image.
  PlacementAttr bitpipe(int64_t d) {
    SmallVector<int64_t> down, up;
    for (int64_t s = 0; s < 2 * d; ++s) {
      int64_t device = s < d ? s : 2 * d - 1 - s;
      down.push_back(device);
      up.push_back(d - 1 - device);
    }
    return PlacementAttr::get(&context, PlacementKind::BidirectionalV, d,
                              {DenseI64ArrayAttr::get(&context, down),
                               DenseI64ArrayAttr::get(&context, up)});
  }

  MLIRContext context;
};

TEST_F(PlacementAttrTest, ParsesAndPrints) {
  const char *text = "#bitpipe.placement<kind = \"bidirectional-v\", devices = "
                     "4, pipelines = [[0, 1, 2, 3, 3, 2, 1, 0], [3, 2, 1, 0, "
                     "0, 1, 2, 3]]>";
  PlacementAttr placement = parse(text);
  ASSERT_TRUE(placement);
  std::string printed;
  llvm::raw_string_ostream os(printed);
  Attribute(placement).print(os);
  EXPECT_EQ(printed, text);
  EXPECT_EQ(placement, bitpipe(4));
  EXPECT_EQ(placement.getKind(), PlacementKind::BidirectionalV);
  EXPECT_EQ(placement.getNumPipelines(), 2u);
  EXPECT_EQ(placement.getNumStages(), 8u);
  EXPECT_EQ(placement.getDevice(1, 4), 0);
}

TEST_F(PlacementAttrTest, BitPipeChunksMatchTheDesignTable) {
  for (int64_t d : {2, 4, 8}) {
    PlacementAttr placement = bitpipe(d);
    for (int64_t r = 0; r < d; ++r) {
      // (pipeline, stage), pipeline-major: down c0, c2; up c1, c3.
      SmallVector<std::pair<unsigned, unsigned>> expected = {
          {0, r}, {0, 2 * d - 1 - r}, {1, d - 1 - r}, {1, d + r}};
      EXPECT_EQ(placement.getChunks(r), expected) << "D=" << d << " r=" << r;
    }
  }
}

TEST_F(PlacementAttrTest, ReplicasArePartnerDevices) {
  PlacementAttr placement = bitpipe(4);
  SmallVector<SmallVector<int64_t>> groups = placement.getReplicaGroups();
  ASSERT_EQ(groups.size(), 8u);
  for (unsigned s = 0; s < 8; ++s) {
    int64_t r = placement.getDevice(0, s);
    SmallVector<int64_t> expected = {std::min(r, 3 - r), std::max(r, 3 - r)};
    EXPECT_EQ(groups[s], expected) << "stage " << s;
  }
}

TEST_F(PlacementAttrTest, LoopHasNoReplicas) {
  PlacementAttr placement = parse("#bitpipe.placement<kind = \"loop\", "
                                  "devices = 2, pipelines = [[0, 1, 0, 1]]>");
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement.getReplicaGroup(2), SmallVector<int64_t>({0}));
  EXPECT_EQ(placement.getChunks(1),
            (SmallVector<std::pair<unsigned, unsigned>>{{0, 1}, {0, 3}}));
}

// The attribute is the library's placement in the IR: converting either way
// loses nothing, and replica groups are the library's.
TEST_F(PlacementAttrTest, RoundTripsTheLibrarysPlacements) {
  for (PlacementKind kind :
       {PlacementKind::Loop, PlacementKind::V, PlacementKind::Bidirectional,
        PlacementKind::BidirectionalV})
    for (int devices : {2, 4}) {
      bitpipe::sched::Result<bitpipe::sched::Placement> p =
          bitpipe::sched::makePlacement(kind, devices, 2);
      ASSERT_TRUE(p.ok()) << p.error;
      PlacementAttr attr = PlacementAttr::get(&context, *p);
      EXPECT_EQ(attr.getKind(), kind);
      EXPECT_TRUE(attr.toSched() == *p)
          << bitpipe::sched::placementKindName(kind) << " D=" << devices;
      std::vector<std::vector<int>> groups = p->replicaGroups();
      ASSERT_EQ(attr.getReplicaGroups().size(), groups.size());
      for (unsigned s = 0; s < groups.size(); ++s)
        EXPECT_EQ(attr.getReplicaGroup(s),
                  SmallVector<int64_t>(groups[s].begin(), groups[s].end()));
    }
}

TEST_F(PlacementAttrTest, VerifierRejectsBadPlacements) {
  // Diagnostics go to the context's handler; keep the test output quiet.
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  EXPECT_FALSE(parse("#bitpipe.placement<kind = \"v\", devices = 2, "
                     "pipelines = [[0, 1, 2, 0]]>"));
  EXPECT_FALSE(parse("#bitpipe.placement<kind = \"bidirectional\", "
                     "devices = 2, pipelines = [[0, 1], [1]]>"));
  EXPECT_FALSE(parse("#bitpipe.placement<kind = \"loop\", devices = 2, "
                     "pipelines = [[0, 1], [1, 0]]>"));
}

} // namespace
