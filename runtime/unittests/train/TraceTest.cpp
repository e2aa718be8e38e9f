//===- TraceTest.cpp - Chrome trace, bubble fraction, step line -----------===//

#include "train/Trace.h"
#include "TempDir.h"
#include "core/Json.h"
#include "train/StepLog.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

using namespace bitpipe::runtime;
using bitpipe::runtime::testing::readBytes;
using bitpipe::runtime::testing::TempDir;

namespace {

TEST(TraceTest, EventsSurviveSerialisationExactly) {
  std::vector<TraceEvent> events = {
      {"F0.s0", TraceCategory::Forward, 0.1, 1234.5678},
      {"send to 1 (tag 3)", TraceCategory::Send, 1e9 / 3, 0},
      {"allreduce bucket 0", TraceCategory::AllReduce, 42, 7.25},
      {"allreduce b0", TraceCategory::AllReduce, 43, 8, kAllReduceStreamRow}};
  auto back = deserializeTraceEvents(serializeTraceEvents(events));
  ASSERT_TRUE(back.isOk()) << back.status().message();
  ASSERT_EQ(back->size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ((*back)[i].name, events[i].name);
    EXPECT_EQ((*back)[i].category, events[i].category);
    EXPECT_EQ((*back)[i].startUs, events[i].startUs);
    EXPECT_EQ((*back)[i].durationUs, events[i].durationUs);
    EXPECT_EQ((*back)[i].row, events[i].row);
  }
  EXPECT_FALSE(deserializeTraceEvents("9 0 0x0p+0 0x0p+0 x\n").isOk());
  EXPECT_FALSE(deserializeTraceEvents("0 0 0x0p+0 0x0p+0 x").isOk());
  Expected<std::vector<TraceEvent>> badRow =
      deserializeTraceEvents("0 5 0x0p+0 0x0p+0 x\n");
  ASSERT_FALSE(badRow.isOk());
  EXPECT_NE(badRow.status().message().find("bad row"), std::string::npos);
}

TEST(TraceTest, ChromeTraceHasOneProcessPerRankAndCompleteEvents) {
  TempDir dir;
  std::vector<std::vector<TraceEvent>> perRank = {
      {{"F0", TraceCategory::Forward, 0, 10},
       {"B0", TraceCategory::Backward, 10, 20}},
      {{"recv \"x\"", TraceCategory::Recv, 3, 4}}};
  std::string path = dir.file("trace.json");
  ASSERT_TRUE(writeChromeTrace(path, perRank).isOk());
  EXPECT_EQ(dir.list(), std::vector<std::string>{"trace.json"});
  auto json = parseJson(readBytes(path));
  ASSERT_TRUE(json.isOk()) << json.status().message();
  const JsonValue *events = json->get("traceEvents");
  ASSERT_NE(events, nullptr);
  int complete = 0;
  std::vector<int> perPid(2, 0);
  for (const JsonValue &e : events->array) {
    if (e.get("ph")->string != "X")
      continue;
    ++complete;
    ++perPid[e.get("pid")->integer];
    if (e.get("name")->string == "B0") {
      EXPECT_EQ(e.get("cat")->string, "backward");
      EXPECT_EQ(e.get("ts")->number, 10);
      EXPECT_EQ(e.get("dur")->number, 20);
    }
    if (e.get("pid")->integer == 1) {
      EXPECT_EQ(e.get("name")->string, "recv \"x\"");
    }
  }
  EXPECT_EQ(complete, 3);
  EXPECT_EQ(perPid, (std::vector<int>{2, 1}));
  // Every row in use is named: here the host's alone (the CPU target's).
  std::string text = readBytes(path);
  EXPECT_NE(text.find("\"tid\":0,\"args\":{\"name\":\"host\"}"),
            std::string::npos);
  EXPECT_EQ(text.find("\"steps\""), std::string::npos);
}

TEST(TraceTest, StepsHaveARowOfTheirOwn) {
  TempDir dir;
  std::vector<std::vector<TraceEvent>> perRank = {
      {{"F0.s0", TraceCategory::Forward, 0, 10},
       {"step 1", TraceCategory::Other, 0, 12, kStepRow}}};
  std::string path = dir.file("trace.json");
  ASSERT_TRUE(writeChromeTrace(path, perRank).isOk());
  std::string text = readBytes(path);
  EXPECT_NE(text.find("\"tid\":4,\"args\":{\"name\":\"steps\"}"),
            std::string::npos)
      << text;
  EXPECT_TRUE(bitpipe::trace::isRunSpanName("step 1"));
  EXPECT_FALSE(bitpipe::trace::isRunSpanName("step 1x"));
  // A step's marker is neither compute nor a host wait: the shares of
  // the window are the host row's.
  StepShares shares = stepShares(perRank[0], 0, 20);
  EXPECT_DOUBLE_EQ(shares.compute, 0.5);
  EXPECT_DOUBLE_EQ(shares.other, 0);
  EXPECT_DOUBLE_EQ(shares.untracked, 0.5);
}

TEST(TraceTest, StepSharesSayWhatTheBubbleIsMadeOf) {
  std::vector<TraceEvent> events = {
      {"F0.s0", TraceCategory::Forward, 0, 40},
      {"recv r1 t0", TraceCategory::Recv, 40, 20},
      {"send r1 t0", TraceCategory::Send, 60, 5},
      {"allreduce.wait b0", TraceCategory::AllReduce, 65, 10},
      {"an untyped host span", TraceCategory::Other, 75, 5},
      {"optimizer", TraceCategory::Optimizer, 80, 10},
      // Device spans overlap the host's: not counted as host waits.
      {"recv r1 t0", TraceCategory::Recv, 0, 100, kPointToPointStreamRow}};
  StepShares s = stepShares(events, 0, 100);
  EXPECT_DOUBLE_EQ(s.compute, 0.5);
  EXPECT_DOUBLE_EQ(s.recv, 0.2);
  EXPECT_DOUBLE_EQ(s.send, 0.05);
  EXPECT_DOUBLE_EQ(s.allReduce, 0.1);
  EXPECT_DOUBLE_EQ(s.other, 0.05);
  EXPECT_NEAR(s.untracked, 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(1 - s.compute, bubbleFraction(events, 0, 100));
}

TEST(TraceTest, DeviceSpansGoToTheirStreamsRows) {
  TraceRecorder r;
  r.record("F0.s0", TraceCategory::Forward, 0, 10);
  r.record("F0.s0", TraceCategory::Device, 2, 10); // the compute stream's
  r.record("send r1 t0", TraceCategory::Send, 12, 3, kPointToPointStreamRow);
  std::string json = chromeTraceJson({r.events()});
  EXPECT_NE(json.find("\"cat\":\"forward\",\"ph\":\"X\",\"ts\":0.000,"
                      "\"dur\":10.000,\"pid\":0,\"tid\":0}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"cat\":\"device\",\"ph\":\"X\",\"ts\":2.000,"
                      "\"dur\":10.000,\"pid\":0,\"tid\":1}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"cat\":\"send\",\"ph\":\"X\",\"ts\":12.000,"
                      "\"dur\":3.000,\"pid\":0,\"tid\":2}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"tid\":1,\"args\":{\"name\":\"device: compute "
                      "stream\"}"),
            std::string::npos);
  EXPECT_EQ(json.find("all-reduce stream"), std::string::npos); // unused
}

TEST(TraceTest, ScopeRecordsTheIntervalItWasAlive) {
  // The scope sleeps a known time; the event must cover at least that and
  // lie between clock readings taken just outside the scope. sleep_for
  // never returns early (steady clock), so the lower bound cannot flake; a
  // busy machine only makes the interval longer, which the bounds allow.
  TraceRecorder r;
  const double sleepUs = 5000;
  double before = r.nowUs();
  {
    TraceRecorder::Scope s(r, "F1.s0", TraceCategory::Forward);
    std::this_thread::sleep_for(std::chrono::microseconds(5000));
  }
  double after = r.nowUs();
  ASSERT_EQ(r.events().size(), 1u);
  const TraceEvent &e = r.events()[0];
  EXPECT_EQ(e.name, "F1.s0");
  EXPECT_EQ(e.category, TraceCategory::Forward);
  EXPECT_GE(e.durationUs, sleepUs);
  EXPECT_GE(e.startUs, before);
  EXPECT_LE(e.startUs + e.durationUs, after);
}

TEST(TraceTest, BubbleFractionIsIdleOverStepTime) {
  std::vector<TraceEvent> ev = {
      {"F0", TraceCategory::Forward, 10, 20},   // [10, 30)
      {"inner", TraceCategory::Forward, 15, 5}, // nested: no double count
      {"recv", TraceCategory::Recv, 30, 40},    // waiting is idle
      {"B0", TraceCategory::Backward, 70, 40},  // [70, 110), clipped to 100
      {"opt", TraceCategory::Optimizer, -5, 10}, // [-5, 5), clipped to [0, 5)
  };
  // Busy: 20 + 30 + 5 = 55 of 100.
  EXPECT_DOUBLE_EQ(bubbleFraction(ev, 0, 100), 0.45);
  EXPECT_DOUBLE_EQ(bubbleFraction({}, 0, 100), 1.0);
  EXPECT_DOUBLE_EQ(bubbleFraction(ev, 100, 100), 0.0);
}

TEST(TraceTest, StepLineHasTheDocumentedFormat) {
  StepStats s;
  s.step = 12;
  s.loss = 4.12344;
  s.tokens = 7800;
  s.seconds = 0.512;
  s.bubble = {0.2112, 0.18};
  EXPECT_EQ(formatStepLine(s), "step 12 | loss 4.1234 | 15234 tok/s | 0.512 s "
                               "| bubble r0 0.21 r1 0.18");
  s.bubble.clear();
  EXPECT_EQ(formatStepLine(s), "step 12 | loss 4.1234 | 15234 tok/s | 0.512 s");
  s.lr = 2.5e-4;
  EXPECT_EQ(formatStepLine(s),
            "step 12 | loss 4.1234 | 15234 tok/s | 0.512 s | lr 0.00025");
}

TEST(TraceTest, ProgressBarOnlyWhenAsked) {
  TempDir dir;
  std::string path = dir.file("log.txt");
  StepStats s;
  s.step = 1;
  s.seconds = 1;
  {
    std::FILE *f = std::fopen(path.c_str(), "w");
    StepLogger log(f, 10); // a regular file is not a TTY
    EXPECT_FALSE(log.showsProgress());
    log.log(s);
    s.step = 2;
    log.log(s);
    log.finish();
    std::fclose(f);
  }
  EXPECT_EQ(readBytes(path), "step 1 | loss 0.0000 | 0 tok/s | 1.000 s\n"
                             "step 2 | loss 0.0000 | 0 tok/s | 1.000 s\n");
  {
    std::FILE *f = std::fopen(path.c_str(), "w");
    StepLogger log(f, 10, /*forceProgress=*/1);
    s.step = 5;
    log.log(s);
    std::string bar = "[" + std::string(15, '#') + std::string(15, '.') +
                      "] 5/10";
    std::fflush(f);
    EXPECT_NE(readBytes(path).find(bar), std::string::npos) << readBytes(path);
    log.finish();
    std::fclose(f);
  }
}

} // namespace
