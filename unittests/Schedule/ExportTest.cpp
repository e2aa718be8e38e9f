//===- ExportTest.cpp - Chrome trace, SVG and torch CSV writers -----------===//
//
// Expectations come from the simulated timeline, the writer's options and
// closed forms, not from an earlier output: the SVG checks read the picture
// back (a small XML reader) and find every action where the simulator ran
// it, so that they survive changes of style.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Export.h"

#include "TestSchedules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

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

/// One element of a parsed XML document.
struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::string text; ///< Character data directly inside, entities unexpanded.
  std::vector<int> children;
};

/// A minimal XML well-formedness checker and reader: elements, attributes
/// in double quotes, text with the predefined entities and character
/// references, comments and processing instructions skipped. `error` is
/// empty when the document is well-formed (tags balance, one root, no raw
/// '<' or '&' where markup is not allowed).
struct XmlDocument {
  std::vector<XmlElement> elements; ///< elements[0] is the root.
  std::string error;
};

class XmlReader {
public:
  explicit XmlReader(const std::string &text) : s_(text) {}
  XmlDocument read() {
    while (i_ < s_.size() && doc_.error.empty()) {
      if (s_[i_] != '<')
        text();
      else if (s_.compare(i_, 4, "<!--") == 0)
        skipPast("-->");
      else if (s_.compare(i_, 2, "<?") == 0)
        skipPast("?>");
      else if (s_.compare(i_, 2, "</") == 0)
        closeTag();
      else
        openTag();
    }
    if (doc_.error.empty() && !open_.empty())
      fail("<" + doc_.elements[open_.back()].name + "> is never closed");
    if (doc_.error.empty() && doc_.elements.empty())
      fail("no root element");
    return doc_;
  }

private:
  void fail(const std::string &why) {
    if (doc_.error.empty())
      doc_.error = why + " at offset " + std::to_string(i_);
  }
  void skipPast(const char *end) {
    size_t at = s_.find(end, i_);
    if (at == std::string::npos)
      return fail(std::string("no ") + end);
    i_ = at + std::strlen(end);
  }
  static bool nameChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' ||
           c == '_' || c == ':' || c == '.';
  }
  std::string name() {
    size_t start = i_;
    while (i_ < s_.size() && nameChar(s_[i_]))
      ++i_;
    return s_.substr(start, i_ - start);
  }
  void skipSpace() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_])))
      ++i_;
  }
  /// True when `chars` (text or an attribute value) has no raw '<' and
  /// every '&' starts an entity.
  static bool escaped(const std::string &chars) {
    for (size_t k = 0; k < chars.size(); ++k) {
      if (chars[k] == '<')
        return false;
      if (chars[k] != '&')
        continue;
      size_t semi = chars.find(';', k);
      if (semi == std::string::npos)
        return false;
      std::string entity = chars.substr(k + 1, semi - k - 1);
      bool known = entity == "lt" || entity == "gt" || entity == "amp" ||
                   entity == "quot" || entity == "apos" ||
                   (entity.size() > 1 && entity[0] == '#');
      if (!known)
        return false;
    }
    return true;
  }
  void text() {
    size_t end = std::min(s_.find('<', i_), s_.size());
    std::string chars = s_.substr(i_, end - i_);
    i_ = end;
    if (!escaped(chars))
      return fail("unescaped '&' in text");
    bool blank = std::all_of(chars.begin(), chars.end(), [](char c) {
      return std::isspace(static_cast<unsigned char>(c));
    });
    if (open_.empty()) {
      if (!blank)
        fail("text outside the root element");
      return;
    }
    doc_.elements[open_.back()].text += chars;
  }
  void closeTag() {
    i_ += 2;
    std::string n = name();
    skipSpace();
    if (i_ >= s_.size() || s_[i_] != '>')
      return fail("bad closing tag </" + n);
    ++i_;
    if (open_.empty() || doc_.elements[open_.back()].name != n)
      return fail("</" + n + "> does not close the open element");
    open_.pop_back();
  }
  void openTag() {
    ++i_;
    XmlElement e;
    e.name = name();
    if (e.name.empty())
      return fail("'<' without a tag name");
    if (open_.empty() && !doc_.elements.empty())
      return fail("a second root element <" + e.name + ">");
    for (;;) {
      skipSpace();
      if (s_.compare(i_, 2, "/>") == 0 || s_.compare(i_, 1, ">") == 0)
        break;
      std::string key = name();
      if (key.empty() || s_.compare(i_, 2, "=\"") != 0)
        return fail("bad attribute in <" + e.name + ">");
      i_ += 2;
      size_t end = s_.find('"', i_);
      if (end == std::string::npos)
        return fail("unterminated attribute " + key);
      std::string value = s_.substr(i_, end - i_);
      i_ = end + 1;
      if (!escaped(value) || !e.attrs.emplace(key, value).second)
        return fail("bad or repeated attribute " + key);
    }
    bool selfClosing = s_[i_] == '/';
    i_ += selfClosing ? 2 : 1;
    int id = static_cast<int>(doc_.elements.size());
    if (!open_.empty())
      doc_.elements[open_.back()].children.push_back(id);
    doc_.elements.push_back(std::move(e));
    if (!selfClosing)
      open_.push_back(id);
  }

  const std::string &s_;
  size_t i_ = 0;
  std::vector<int> open_;
  XmlDocument doc_;
};

XmlDocument parseXml(const std::string &text) { return XmlReader(text).read(); }

/// A number attribute of `e`; NaN when missing or not a number.
double number(const XmlElement &e, const std::string &attr) {
  auto it = e.attrs.find(attr);
  if (it == e.attrs.end())
    return std::nan("");
  char *end = nullptr;
  double v = std::strtod(it->second.c_str(), &end);
  return end && *end == '\0' && end != it->second.c_str() ? v : std::nan("");
}

std::string attr(const XmlElement &e, const std::string &name) {
  auto it = e.attrs.find(name);
  return it == e.attrs.end() ? "" : it->second;
}

/// A <rect class="action"> of the timeline.
struct Box {
  double x, y, w, h;
  std::string fill, tooltip;
  bool matched = false;
};

std::vector<Box> actionBoxes(const XmlDocument &doc) {
  std::vector<Box> boxes;
  for (const XmlElement &e : doc.elements) {
    if (e.name != "rect" || attr(e, "class") != "action")
      continue;
    Box b{number(e, "x"),      number(e, "y"),  number(e, "width"),
          number(e, "height"), attr(e, "fill"), ""};
    for (int c : e.children)
      if (doc.elements[c].name == "title")
        b.tooltip = doc.elements[c].text;
    boxes.push_back(b);
  }
  return boxes;
}

/// The distinct tops of the boxes of height `rowHeight`, ascending.
std::vector<double> rowTops(const std::vector<Box> &boxes, double rowHeight) {
  std::set<double> tops;
  for (const Box &b : boxes)
    if (b.h == rowHeight)
      tops.insert(b.y);
  return {tops.begin(), tops.end()};
}

/// True when some <text> reads `label` at a point inside `box`.
bool labelInside(const XmlDocument &doc, const Box &box,
                 const std::string &label) {
  for (const XmlElement &e : doc.elements) {
    if (e.name != "text" || e.text != label)
      continue;
    double x = number(e, "x"), y = number(e, "y");
    if (x >= box.x && x <= box.x + box.w && y >= box.y && y <= box.y + box.h)
      return true;
  }
  return false;
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
  // Micro-batches 0,1 go down and 2,3 up. Down: 2 x 8 stages x (F, B) = 32
  // computes, and 2 x 12 transfers (7 + 7 hand-offs, less the two local
  // ones at the V bottom), each seen from both ends: 48.
  EXPECT_EQ(count(json, "\"direction\":\"down\"}"), 32 + 48);
  EXPECT_NE(json.find("\"name\":\"AR(4,7)\""), std::string::npos);
  EXPECT_NE(json.find("\"stages\":[4,7],\"bytes\":2"), std::string::npos);
  EXPECT_NE(json.find("\"schedule\":\"bitpipe\""), std::string::npos);
}

TEST(Export, XmlCheckerRejectsBrokenXml) {
  // The checker itself must be able to fail.
  for (const char *bad :
       {"<svg>", "<svg><rect></svg>", "<a></b>", "<svg x=\"1></svg>",
        "<svg x=1/>", "<svg>a & b</svg>", "<svg/><svg/>", "text<svg/>",
        "<svg a=\"1\" a=\"2\"/>", "<svg t=\"a<b\"/>", "</svg>"}) {
    EXPECT_NE(parseXml(bad).error, "") << bad;
  }
  XmlDocument good = parseXml("<?xml version=\"1.0\"?>\n<svg w=\"2\"><!-- "
                              "c --><g><text>a &amp; b</text></g><rect/>"
                              "</svg>\n");
  ASSERT_EQ(good.error, "");
  ASSERT_EQ(good.elements.size(), 4u);
  EXPECT_EQ(good.elements[0].children, (std::vector<int>{1, 3}));
  EXPECT_EQ(good.elements[2].text, "a &amp; b");
  EXPECT_EQ(number(good.elements[0], "w"), 2);
}

TEST(Export, SvgDrawsEachActionWhereAndWhenTheSimulatorRunsIt) {
  // Expectations come from the simulated timeline and the options, not
  // from an earlier output: one box per F/B and per all-reduce, at
  // x = left + start * scale, width = duration * scale, on its rank's row
  // (all-reduces in a lane under it), labelled with its micro-batch, in a
  // colour that depends only on direction and pass. All-reduces take time
  // here (two stages of 1 byte at bandwidth 1: 2 slots) so that their
  // widths are checked too.
  CostModel cost;
  cost.gradientBytes.assign(8, 1.0);
  cost.allReduceBandwidth = 1;
  Schedule s = bitpipeD4N4();
  SimResult sim = simulated(s, cost);
  SvgOptions options;
  options.pixelsPerUnit = 30;
  options.computeRowHeight = 28;
  options.allReduceRowHeight = 12;
  const double ppu = options.pixelsPerUnit, rowH = options.computeRowHeight;
  XmlDocument doc = parseXml(toSvg(s, sim, options));
  ASSERT_EQ(doc.error, "");
  const XmlElement &root = doc.elements[0];
  EXPECT_EQ(root.name, "svg");
  EXPECT_EQ(attr(root, "xmlns"), "http://www.w3.org/2000/svg");

  std::vector<const TimelineEvent *> events;
  for (const TimelineEvent &e : sim.timeline)
    if (e.lane != Lane::P2P)
      events.push_back(&e);
  // 4 micro-batches x 8 stages x (F, B), and two all-reduces per rank.
  ASSERT_EQ(events.size(), 4u * 8 * 2 + 4 * 2);
  std::vector<Box> boxes = actionBoxes(doc);
  ASSERT_EQ(boxes.size(), events.size());

  // One row per rank, evenly spaced, with room for the all-reduce lane.
  std::vector<double> top = rowTops(boxes, rowH);
  ASSERT_EQ(top.size(), 4u);
  const double pitch = top[1] - top[0];
  EXPECT_GE(pitch, rowH + options.allReduceRowHeight);
  for (int r = 0; r < 4; ++r)
    EXPECT_DOUBLE_EQ(top[r], top[0] + r * pitch);
  // Time 0 is the plot's left edge: the first forwards start there.
  double left = boxes[0].x;
  for (const Box &b : boxes)
    left = std::min(left, b.x);

  std::map<std::pair<int, ActionKind>, std::string> fillOf;
  std::set<std::string> arFills, fills;
  for (const TimelineEvent *e : events) {
    const bool compute = e->lane == Lane::Compute;
    const std::string what =
        e->action.str() + " on rank " + std::to_string(e->rank);
    Box *box = nullptr;
    for (Box &b : boxes) {
      bool onRow = compute ? b.y == top[e->rank] && b.h == rowH
                           : b.y >= top[e->rank] + rowH &&
                                 b.y + b.h <= top[e->rank] + pitch;
      if (!b.matched && onRow &&
          std::abs(b.x - (left + e->start * ppu)) < 1e-3 &&
          std::abs(b.w - (e->end - e->start) * ppu) < 1e-3) {
        box = &b;
        break;
      }
    }
    ASSERT_NE(box, nullptr)
        << "no box for " << what << " [" << e->start << ", " << e->end << "]";
    box->matched = true;
    EXPECT_EQ(box->tooltip.rfind(e->action.str(), 0), 0u) << box->tooltip;
    fills.insert(box->fill);
    if (!compute) {
      arFills.insert(box->fill);
      continue;
    }
    EXPECT_TRUE(labelInside(doc, *box, std::to_string(e->action.microbatch)))
        << what;
    int pipeline = s.microbatchPipeline[e->action.microbatch];
    auto [it, added] =
        fillOf.emplace(std::pair{pipeline, e->action.kind}, box->fill);
    EXPECT_EQ(it->second, box->fill) << what;
  }
  // Two directions x (F, B): four colours, and one more for all-reduces.
  std::set<std::string> computeFills;
  for (const auto &[key, fill] : fillOf)
    computeFills.insert(fill);
  EXPECT_EQ(fillOf.size(), 4u);
  EXPECT_EQ(computeFills.size(), 4u);
  ASSERT_EQ(arFills.size(), 1u);
  EXPECT_EQ(computeFills.count(*arFills.begin()), 0u);
  // The legend shows a swatch of every colour in use.
  std::set<std::string> swatches;
  for (const XmlElement &e : doc.elements)
    if (e.name == "rect" && attr(e, "class") != "action")
      swatches.insert(attr(e, "fill"));
  for (const std::string &fill : fills)
    EXPECT_EQ(swatches.count(fill), 1u) << fill;
  // The picture is wide enough for the whole step.
  EXPECT_GE(number(root, "width"), left + sim.makespan * ppu);
}

TEST(Export, SvgTitleStatesScheduleSizeMakespanAndBubble) {
  // Unit costs: BitPipe D=4, N=4 takes 28 slots (docs/bitpipe-order.md), bubble
  // (D-2)/(3N+D-2) = 2/14.
  Schedule s = bitpipeD4N4();
  SimResult sim = simulated(s);
  SvgOptions options;
  XmlDocument doc = parseXml(toSvg(s, sim, options));
  ASSERT_EQ(doc.error, "");
  std::string title;
  for (int c : doc.elements[0].children)
    if (doc.elements[c].name == "title")
      title = doc.elements[c].text;
  for (const char *part : {"bitpipe", "D=4", "N=4", "28"})
    EXPECT_NE(title.find(part), std::string::npos) << part << " in " << title;
  size_t percent = title.find('%');
  ASSERT_NE(percent, std::string::npos) << title;
  size_t begin = title.find_last_of(' ', percent) + 1;
  EXPECT_NEAR(std::stod(title.substr(begin, percent - begin)), 100.0 * 2 / 14,
              0.01)
      << title;
  // Free all-reduces still get a visible box.
  int allReduces = 0;
  for (const Box &b : actionBoxes(doc))
    if (b.h < options.computeRowHeight) {
      ++allReduces;
      EXPECT_GT(b.w, 0);
    }
  EXPECT_EQ(allReduces, 8);
}

TEST(Export, SvgEscapesTheScheduleName) {
  Schedule s = oneFOneB(2, 2);
  s.name = "a<b & \"c\"";
  std::string svg = toSvg(s, simulated(s));
  XmlDocument doc = parseXml(svg);
  EXPECT_EQ(doc.error, "");
  EXPECT_NE(svg.find("a&lt;b &amp; &quot;c&quot;"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  // 2 ranks x 2 micro-batches x (F, B).
  EXPECT_EQ(actionBoxes(doc).size(), 8u);
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

namespace {

TEST(Export, SvgFitsItsScaleToTheTimeRange) {
  // The same schedule in milliseconds (every cost / 1000): the fitted
  // picture is the unit-cost one, boxes and all, with its unit said.
  Schedule s = bitpipeD4N4();
  SimResult units = simulated(s);
  CostModel ms;
  ms.unitForward = 1e-3;
  ms.unitBackward = 2e-3;
  SimResult millis = simulated(s, ms);
  EXPECT_DOUBLE_EQ(svgPixelsPerUnit(units, {}), 24);
  EXPECT_NEAR(svgPixelsPerUnit(millis, {}), 24000, 1e-6);
  SvgOptions inMs;
  inMs.timeUnit = "ms";
  XmlDocument a = parseXml(toSvg(s, units));
  XmlDocument b = parseXml(toSvg(s, millis, inMs));
  ASSERT_EQ(a.error, "");
  ASSERT_EQ(b.error, "");
  std::vector<Box> boxesA = actionBoxes(a), boxesB = actionBoxes(b);
  ASSERT_EQ(boxesA.size(), boxesB.size());
  for (size_t i = 0; i < boxesA.size(); ++i) {
    EXPECT_NEAR(boxesA[i].x, boxesB[i].x, 1e-6);
    EXPECT_NEAR(boxesA[i].w, boxesB[i].w, 1e-6);
  }
  std::string svg = toSvg(s, millis, inMs);
  EXPECT_NE(svg.find("makespan 0.028 ms"), std::string::npos);
  EXPECT_NE(svg.find(">0 ms</text>"), std::string::npos);
  EXPECT_NE(toSvg(s, units).find("makespan 28 units"), std::string::npos);
  // A long step is kept within 4000 px, a short one given at least 600.
  SimResult longer = units;
  longer.makespan = 1000;
  EXPECT_DOUBLE_EQ(svgPixelsPerUnit(longer, {}), 4.0);
  // An explicit scale wins.
  SvgOptions fixed;
  fixed.pixelsPerUnit = 7;
  EXPECT_DOUBLE_EQ(svgPixelsPerUnit(millis, fixed), 7);
}

TEST(Export, SvgStackDrawsEachScheduleAtOneScale) {
  Schedule bitpipe = bitpipeD4N4(), plain = oneFOneB(4, 4);
  SimResult a = simulated(bitpipe), b = simulated(plain);
  std::string stack = toSvgStack({{&bitpipe, &a}, {&plain, &b}});
  XmlDocument doc = parseXml(stack);
  ASSERT_EQ(doc.error, "") << stack;
  // Every action of both, in one picture; each panel titled.
  EXPECT_EQ(actionBoxes(doc).size(),
            actionBoxes(parseXml(toSvg(bitpipe, a))).size() +
                actionBoxes(parseXml(toSvg(plain, b))).size());
  EXPECT_NE(stack.find("bitpipe  D=4  N=4"), std::string::npos);
  EXPECT_NE(stack.find("1f1b  D=4  N=4"), std::string::npos);
  size_t panels = 0;
  for (const XmlElement &e : doc.elements)
    panels += e.name == "g" && attr(e, "class") == "panel";
  EXPECT_EQ(panels, 2u);
  // One scale: the finer fitted one of the two, 24 px a slot for both here,
  // so that every forward (1 slot) and backward (2) of either is 24 or 48
  // px wide.
  for (const Box &b : actionBoxes(doc))
    if (b.h == SvgOptions().computeRowHeight)
      EXPECT_TRUE(b.w == 24 || b.w == 48) << b.tooltip << " " << b.w;
}

} // namespace
