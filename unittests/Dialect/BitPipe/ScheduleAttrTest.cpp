//===- ScheduleAttrTest.cpp - #bitpipe.schedule and the library -----------===//
//
// The attribute records what the programs do not say about a schedule;
// writing a library schedule into it and reading it back loses nothing.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/BitPipe/IR/BitPipeAttrs.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Schedule/Registry.h"

#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace bitpipe;

TEST(ScheduleAttr, CarriesWhatTheProgramsDoNotSay) {
  MLIRContext context;
  context.loadDialect<bp::BitPipeDialect>();
  for (const sched::ScheduleInfo &info : sched::schedules()) {
    // N = 5 on 4 devices: the bidirectional schedules leave a note.
    sched::Result<sched::Schedule> s =
        sched::generateSchedule({info.name, 4, 5});
    if (!s.ok())
      continue; // interleaved-1f1b refuses this N; the others are enough.
    auto attr = bp::ScheduleAttr::get(&context, *s);
    sched::Schedule back;
    attr.applyTo(back);
    EXPECT_EQ(back.name, s->name);
    EXPECT_EQ(back.numMicrobatches, s->numMicrobatches);
    EXPECT_EQ(back.microbatchPipeline, s->microbatchPipeline);
    EXPECT_EQ(back.splitBackward, s->splitBackward);
    EXPECT_EQ(back.note, s->note);
  }
  sched::Result<sched::Schedule> chimera =
      sched::generateSchedule({"chimera", 4, 5});
  ASSERT_TRUE(chimera.ok()) << chimera.error;
  EXPECT_FALSE(bp::ScheduleAttr::get(&context, *chimera).getNote().empty());
}
