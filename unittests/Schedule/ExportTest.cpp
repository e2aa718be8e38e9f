//===- ExportTest.cpp - Chrome trace, SVG and torch CSV writers -----------===//

#include "bitpipe/Schedule/Export.h"

#include "TestSchedules.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace bitpipe::sched;
using namespace bitpipe::sched::test;

namespace {

/// A minimal JSON syntax checker (RFC 8259 grammar, no semantic checks):
/// enough to know the trace would load.
class JsonChecker {
public:
  explicit JsonChecker(const std::string &text) : s_(text) {}
  bool valid() {
    ws();
    if (!value())
      return false;
    ws();
    return i_ == s_.size();
  }
  std::string where() const { return s_.substr(i_, 40); }

private:
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_])))
      ++i_;
  }
  bool eat(char c) {
    ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool value() {
    ws();
    if (i_ >= s_.size())
      return false;
    char c = s_[i_];
    if (c == '{')
      return object();
    if (c == '[')
      return array();
    if (c == '"')
      return string();
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c)))
      return number();
    for (const char *lit : {"true", "false", "null"})
      if (s_.compare(i_, std::strlen(lit), lit) == 0) {
        i_ += std::strlen(lit);
        return true;
      }
    return false;
  }
  bool object() {
    ++i_;
    if (eat('}'))
      return true;
    do {
      ws();
      if (!string() || !eat(':') || !value())
        return false;
    } while (eat(','));
    return eat('}');
  }
  bool array() {
    ++i_;
    if (eat(']'))
      return true;
    do {
      if (!value())
        return false;
    } while (eat(','));
    return eat(']');
  }
  bool string() {
    if (i_ >= s_.size() || s_[i_] != '"')
      return false;
    for (++i_; i_ < s_.size(); ++i_) {
      if (s_[i_] == '\\') {
        ++i_;
        continue;
      }
      if (static_cast<unsigned char>(s_[i_]) < 0x20)
        return false;
      if (s_[i_] == '"') {
        ++i_;
        return true;
      }
    }
    return false;
  }
  bool number() {
    size_t start = i_;
    if (s_[i_] == '-')
      ++i_;
    while (i_ < s_.size() &&
           (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' ||
            s_[i_] == 'e' || s_[i_] == 'E' || s_[i_] == '+' || s_[i_] == '-'))
      ++i_;
    return i_ > start && std::isdigit(static_cast<unsigned char>(s_[i_ - 1]));
  }

  const std::string &s_;
  size_t i_ = 0;
};

int count(const std::string &text, const std::string &part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos;
       at = text.find(part, at + part.size()))
    ++n;
  return n;
}

SimResult simulated(const Schedule &s, const CostModel &cost = CostModel()) {
  Result<SimResult> r = simulate(s, cost);
  EXPECT_TRUE(r) << r.error;
  return r ? *r.value : SimResult();
}

} // namespace

TEST(Export, JsonCheckerRejectsBrokenJson) {
  // The checker itself must be able to fail.
  for (const char *bad :
       {"{", "{\"a\":}", "[1,]", "{\"a\":1}}", "{'a':1}", "[\"x\" \"y\"]"}) {
    std::string text = bad;
    EXPECT_FALSE(JsonChecker(text).valid()) << bad;
  }
  std::string good = "{\"a\":[1,-2.5,\"x\\\"y\",true,null,{}]}";
  EXPECT_TRUE(JsonChecker(good).valid());
}

TEST(Export, ChromeTraceOfOneFOneB) {
  CostModel cost;
  cost.p2pLatency = 0.5;
  cost.boundaryBytes = {64};
  Schedule s = oneFOneB(2, 2);
  SimResult sim = simulated(s, cost);
  std::string json = toChromeTrace(s, sim);
  JsonChecker checker(json);
  EXPECT_TRUE(checker.valid()) << "at: " << checker.where();
  // 8 computes, 4 transfers seen from both ends.
  EXPECT_EQ(sim.timeline.size(), 16u);
  EXPECT_EQ(count(json, "\"ph\":\"X\""), 16);
  EXPECT_EQ(count(json, "\"name\":\"process_name\""), 2);
  EXPECT_NE(json.find("\"args\":{\"name\":\"rank 1\"}"), std::string::npos);
  EXPECT_NE(json.find("\"args\":{\"name\":\"send to P1\"}"), std::string::npos);
  EXPECT_NE(json.find("\"args\":{\"name\":\"recv from P0\"}"),
            std::string::npos);
  // Rank 0's second forward starts at slot 1 = 1000 us, lasts 1000 us.
  EXPECT_NE(json.find("{\"name\":\"F1.s0\",\"cat\":\"forward\",\"ph\":\"X\","
                      "\"pid\":0,\"tid\":0,\"ts\":1000,\"dur\":1000,\"args\":{"
                      "\"microbatch\":1,\"stage\":0,\"pass\":\"forward\","
                      "\"pipeline\":0,\"direction\":\"pipeline 0\"}}"),
            std::string::npos)
      << json;
  // The first activation goes out at 1000 us and takes 500 us.
  EXPECT_NE(json.find("\"name\":\"SEND_F0.s0->P1\",\"cat\":\"p2p\",\"ph\":"
                      "\"X\",\"pid\":0,\"tid\":101,\"ts\":1000,\"dur\":500"),
            std::string::npos)
      << json;

  ChromeTraceOptions seconds;
  seconds.microsecondsPerUnit = 1e6;
  std::string slow = toChromeTrace(s, sim, seconds);
  EXPECT_NE(slow.find("\"ts\":1000000,\"dur\":1000000"), std::string::npos);
}

TEST(Export, ChromeTraceOfBitPipeNamesDirectionsAndAllReduces) {
  CostModel cost;
  cost.gradientBytes.assign(8, 1.0);
  cost.allReduceBandwidth = 1;
  Schedule s = bitpipeD4N4();
  SimResult sim = simulated(s, cost);
  std::string json = toChromeTrace(s, sim);
  JsonChecker checker(json);
  EXPECT_TRUE(checker.valid()) << "at: " << checker.where();
  EXPECT_EQ(count(json, "\"ph\":\"X\""), static_cast<int>(sim.timeline.size()));
  EXPECT_EQ(count(json, "\"cat\":\"allreduce\""), 8);
  EXPECT_EQ(count(json, "\"cat\":\"forward\""), 32);
  EXPECT_EQ(count(json, "\"cat\":\"backward\""), 32);
  // Micro-batches 0,1 go down and 2,3 up; 16 actions each way.
  EXPECT_EQ(count(json, "\"direction\":\"down\"}"), 32 + 48);
  EXPECT_NE(json.find("\"name\":\"AR(4,7)\""), std::string::npos);
  EXPECT_NE(json.find("\"stages\":[4,7],\"bytes\":2"), std::string::npos);
  EXPECT_NE(json.find("\"schedule\":\"bitpipe\""), std::string::npos);
}

TEST(Export, SvgHasOneBoxPerAction) {
  Schedule s = bitpipeD4N4();
  SimResult sim = simulated(s);
  std::string svg = toSvg(s, sim);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  // 64 F/B boxes and 8 all-reduce markers.
  EXPECT_EQ(count(svg, "<rect class=\"action\""), 72);
  EXPECT_EQ(count(svg, "<text"), count(svg, "</text>"));
  EXPECT_EQ(count(svg, "<rect"),
            count(svg, "/>") + count(svg, "</rect>") - count(svg, "<line"));
  // Title with name, D, N, makespan and bubble ratio (2/14).
  EXPECT_NE(svg.find("bitpipe  D=4  N=4  makespan 28  bubble 14.286%"),
            std::string::npos);
  // Down forward (light blue), up backward (dark orange), AR (purple).
  EXPECT_NE(svg.find("fill=\"#b8d4f0\""), std::string::npos);
  EXPECT_NE(svg.find("fill=\"#b5520f\""), std::string::npos);
  EXPECT_NE(svg.find("fill=\"#8e6bbf\""), std::string::npos);
  EXPECT_NE(svg.find(">F up</text>"), std::string::npos);
  // The first box of rank 0 is F0.s0 at x=56 (left margin), 24 px wide.
  EXPECT_NE(svg.find("<rect class=\"action\" x=\"56\" y=\"44\" width=\"24\""),
            std::string::npos);
  // Micro-batch labels: every micro-batch 16 times (4 stages x F, B x 2).
  EXPECT_EQ(count(svg, ">3</text>"), 16);
}

TEST(Export, SvgEscapesTheScheduleName) {
  Schedule s = oneFOneB(2, 2);
  s.name = "a<b & \"c\"";
  std::string svg = toSvg(s, simulated(s));
  EXPECT_NE(svg.find("a&lt;b &amp; &quot;c&quot;  D=2"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  EXPECT_EQ(count(svg, "<rect class=\"action\""), 8);
}

TEST(Export, TorchCsvRows) {
  EXPECT_EQ(toTorchCsv(oneFOneB(2, 2)), "0F0,0F1,0B0,0B1\n"
                                        "1F0,1B0,1F1,1B1\n");
  // Split backward: B is the input gradient ("I"), W the weight gradient.
  Schedule split = oneFOneB(2, 1);
  split.splitBackward = true;
  split.ranks[0].push_back(Action::weightGrad(0, 0));
  split.ranks[1].push_back(Action::weightGrad(0, 1));
  EXPECT_EQ(toTorchCsv(split), "0F0,0I0,0W0\n"
                               "1F0,1I0,1W0\n");
  // BitPipe: all-reduces are not compute actions and are left out.
  std::string csv = toTorchCsv(bitpipeD4N4());
  std::string row0 = csv.substr(0, csv.find('\n'));
  EXPECT_EQ(row0, "0F0,0F1,3F2,4F2,3F3,4F3,7F0,7B0,7F1,7B1,4B2,3B2,4B3,3B3,"
                  "0B0,0B1");
  EXPECT_EQ(count(csv, "\n"), 4);
  EXPECT_EQ(count(csv, ","), 4 * 15);
}

TEST(Export, WriteFileAtomically) {
  char dir[] = "/tmp/bitpipe-export-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/trace.json";
  Result<std::size_t> w = writeFileAtomic(path, "first");
  ASSERT_TRUE(w) << w.error;
  EXPECT_EQ(*w.value, 5u);
  w = writeFileAtomic(path, "second version");
  ASSERT_TRUE(w) << w.error;
  std::ifstream in(path);
  std::stringstream got;
  got << in.rdbuf();
  EXPECT_EQ(got.str(), "second version");
  EXPECT_NE(access(path.c_str(), F_OK), -1);
  EXPECT_EQ(access((path + ".tmp").c_str(), F_OK), -1);
  std::remove(path.c_str());
  rmdir(dir);

  Result<std::size_t> bad =
      writeFileAtomic(std::string(dir) + "/no/such/dir/x.svg", "x");
  EXPECT_FALSE(bad);
  EXPECT_NE(bad.error.find("cannot create"), std::string::npos) << bad.error;
}
