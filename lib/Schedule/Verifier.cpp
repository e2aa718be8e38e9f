//===- Verifier.cpp - Checks that a schedule can run and is complete ------===//

#include "bitpipe/Schedule/Verifier.h"

#include "bitpipe/Schedule/Dependencies.h"
#include "bitpipe/Schedule/Describe.h"
#include "bitpipe/Schedule/Simulator.h"

#include <algorithm>
#include <map>
#include <optional>

namespace bitpipe::sched {

std::string Diagnostic::str() const { return message + "\n" + grid; }

std::string formatDiagnostics(const std::vector<Diagnostic> &diagnostics) {
  std::string out;
  for (size_t i = 0; i < diagnostics.size(); ++i)
    out += (i ? "\n" : "") + diagnostics[i].str();
  return out;
}

namespace {

std::string rankName(int r) { return "rank " + std::to_string(r); }

class Verifier {
public:
  Verifier(const Schedule &schedule, const VerifyOptions &options)
      : s_(schedule), options_(options) {}

  std::vector<Diagnostic> run(const CommProgram *program);

private:
  void report(DiagKind kind, int rank, int index, std::string message,
              std::vector<ActionSite> marks = {}) {
    if (marks.empty() && rank >= 0 && index >= 0)
      marks.push_back({rank, index});
    diags_.push_back(
        {kind, rank, index, std::move(message), formatGrid(s_, marks)});
  }
  bool checkShape();
  void checkActions();
  void checkAllReduces();
  void checkChannelOrder(const CommProgram &program);
  void checkDeadlock(const CommProgram &program);

  const Schedule &s_;
  const VerifyOptions &options_;
  std::vector<Diagnostic> diags_;
  std::vector<std::vector<int>> groups_;
};

bool Verifier::checkShape() {
  const Placement &p = s_.placement;
  size_t before = diags_.size();
  if (s_.numRanks() != p.numDevices)
    report(DiagKind::Malformed, -1, -1,
           "the schedule has " + quantity(s_.numRanks(), "rank", "ranks") +
               " but the placement " +
               quantity(p.numDevices, "device", "devices"));
  if (static_cast<int>(s_.microbatchPipeline.size()) != s_.numMicrobatches)
    report(DiagKind::Malformed, -1, -1,
           "microbatchPipeline has " +
               quantity(static_cast<int>(s_.microbatchPipeline.size()), "entry",
                        "entries") +
               " for " +
               quantity(s_.numMicrobatches, "micro-batch", "micro-batches"));
  for (size_t m = 0; m < s_.microbatchPipeline.size(); ++m) {
    int k = s_.microbatchPipeline[m];
    if (k < 0 || k >= static_cast<int>(p.pipelines.size()))
      report(DiagKind::Malformed, -1, -1,
             "micro-batch " + std::to_string(m) + " travels pipeline " +
                 std::to_string(k) + ", which does not exist");
  }
  for (size_t k = 0; k < p.pipelines.size(); ++k) {
    const std::vector<int> &devs = p.pipelines[k].stageDevice;
    if (static_cast<int>(devs.size()) != p.numStages) {
      report(DiagKind::Malformed, -1, -1,
             "pipeline " + std::to_string(k) + " places " +
                 quantity(static_cast<int>(devs.size()), "stage", "stages") +
                 ", not " + std::to_string(p.numStages));
      continue;
    }
    for (int st = 0; st < p.numStages; ++st)
      if (devs[st] < 0 || devs[st] >= p.numDevices)
        report(DiagKind::Malformed, -1, -1,
               "pipeline " + std::to_string(k) + " places stage " +
                   std::to_string(st) + " on device " +
                   std::to_string(devs[st]) + ", which does not exist");
  }
  return diags_.size() == before;
}

void Verifier::checkActions() {
  const Placement &p = s_.placement;
  ActionTable table(s_.numMicrobatches, p.numStages);
  for (int r = 0; r < s_.numRanks(); ++r) {
    const std::vector<Action> &actions = s_.ranks[r];
    for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
      const Action &a = actions[i];
      if (a.kind == ActionKind::AllReduce)
        continue;
      if (!table.inRange(a)) {
        report(
            DiagKind::OutOfRange, r, i,
            rankName(r) + ": " + a.str() +
                " is out of range: the schedule has " +
                quantity(s_.numMicrobatches, "micro-batch", "micro-batches") +
                " and " + quantity(p.numStages, "stage", "stages"));
        continue;
      }
      if (a.kind == ActionKind::WeightGrad && !s_.splitBackward)
        report(DiagKind::UnexpectedWeightGrad, r, i,
               rankName(r) + ": " + describe(a) +
                   " in a schedule whose backward is not split");
      ActionSite &site = table.at(a.kind, a.microbatch, a.stage);
      if (site.found()) {
        report(DiagKind::Duplicate, r, i,
               rankName(r) + ": " + describe(a) +
                   " runs twice (first at step " + std::to_string(site.index) +
                   " of " + rankName(site.rank) + ")",
               {site, {r, i}});
        continue;
      }
      site = {r, i};
      int pipeline = s_.microbatchPipeline[a.microbatch];
      int expected = p.device(pipeline, a.stage);
      if (expected != r)
        report(DiagKind::WrongDevice, r, i,
               rankName(r) + ": " + describe(a) + " runs on " + rankName(r) +
                   ", but micro-batch " + std::to_string(a.microbatch) +
                   " travels pipeline " + std::to_string(pipeline) +
                   ", which places stage " + std::to_string(a.stage) + " on " +
                   rankName(expected));
    }
  }

  // Completeness, and the order of a stage's F, B, W on one rank.
  for (int m = 0; m < s_.numMicrobatches; ++m) {
    for (int st = 0; st < p.numStages; ++st) {
      std::vector<ActionKind> kinds = {ActionKind::Forward,
                                       ActionKind::Backward};
      if (s_.splitBackward)
        kinds.push_back(ActionKind::WeightGrad);
      for (ActionKind k : kinds) {
        if (table.at(k, m, st).found())
          continue;
        Action a = {k, m, st, {}};
        report(DiagKind::Missing, -1, -1,
               describe(a) + " runs on no rank (the placement puts it on " +
                   rankName(p.device(s_.microbatchPipeline[m], st)) + ")");
      }
      // A same-stage input runs on the same rank, so it must come earlier
      // in that rank's list (cross-stage inputs are the channel and
      // deadlock checks' business).
      for (ActionKind k : kinds) {
        Action a = {k, m, st, {}};
        std::optional<Action> own = inputsOf(a, p.numStages).sameStage;
        if (!own)
          continue;
        const ActionSite &site = table.at(k, m, st);
        const ActionSite &input = table.at(own->kind, m, st);
        if (!site.found() || !input.found() || site.rank != input.rank ||
            site.index > input.index)
          continue;
        bool backward = k == ActionKind::Backward;
        report(backward ? DiagKind::BackwardBeforeForward
                        : DiagKind::WeightGradBeforeBackward,
               site.rank, site.index,
               rankName(site.rank) + ": " + describe(a) + " runs before its " +
                   (backward ? "forward" : "backward"),
               {site, input});
      }
    }
  }
}

void Verifier::checkAllReduces() {
  const int numStages = s_.placement.numStages;
  // rank -> group -> its ARs with that group, in order (index, stages).
  using Seq = std::vector<std::pair<int, std::vector<int>>>;
  std::map<std::vector<int>, std::map<int, Seq>> byGroup;
  std::vector<std::map<int, int>> reducedCount(s_.numRanks());

  for (int r = 0; r < s_.numRanks(); ++r) {
    const std::vector<Action> &actions = s_.ranks[r];
    for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
      const Action &a = actions[i];
      if (a.kind != ActionKind::AllReduce)
        continue;
      bool ok = !a.stages.empty();
      if (!ok)
        report(DiagKind::OutOfRange, r, i,
               rankName(r) + ": " + a.str() + " names no stage");
      for (int st : a.stages) {
        if (st < 0 || st >= numStages) {
          report(DiagKind::OutOfRange, r, i,
                 rankName(r) + ": " + a.str() + " names stage " +
                     std::to_string(st) + ", which does not exist");
          ok = false;
        } else if (!std::count(groups_[st].begin(), groups_[st].end(), r)) {
          report(DiagKind::AllReduceForeignStage, r, i,
                 rankName(r) + ": " + a.str() + " all-reduces stage " +
                     std::to_string(st) + ", which " + rankName(r) +
                     " does not hold (replica group " + formatSet(groups_[st]) +
                     ")");
          ok = false;
        }
      }
      if (!ok)
        continue;
      for (int st : a.stages) {
        if (groups_[st] == groups_[a.stages.front()])
          continue;
        report(DiagKind::AllReduceMixedGroups, r, i,
               rankName(r) + ": " + a.str() +
                   " mixes stages with different replica groups: stage " +
                   std::to_string(a.stages.front()) + " " +
                   formatSet(groups_[a.stages.front()]) + ", stage " +
                   std::to_string(st) + " " + formatSet(groups_[st]));
        ok = false;
        break;
      }
      if (!ok)
        continue;
      for (int st : a.stages)
        ++reducedCount[r][st];
      // Gradients of these stages must be final on this rank.
      for (int j = i + 1; j < static_cast<int>(actions.size()); ++j) {
        const Action &later = actions[j];
        if (producesGradients(later) &&
            std::count(a.stages.begin(), a.stages.end(), later.stage)) {
          report(DiagKind::AllReduceBeforeGradients, r, i,
                 rankName(r) + ": " + a.str() + " (" + describe(a) +
                     ") starts before the " + describe(later) + ", which " +
                     rankName(r) + " runs later",
                 {{r, i}, {r, j}});
          break;
        }
      }
      byGroup[groups_[a.stages.front()]][r].push_back({i, a.stages});
    }
  }

  // Members of a group must issue the same all-reduces in the same order.
  for (const auto &[group, perRank] : byGroup) {
    int ref = group.front();
    auto refIt = perRank.find(ref);
    static const Seq empty;
    const Seq &refSeq = refIt == perRank.end() ? empty : refIt->second;
    for (int other : group) {
      if (other == ref)
        continue;
      auto it = perRank.find(other);
      const Seq &seq = it == perRank.end() ? empty : it->second;
      size_t n = std::min(refSeq.size(), seq.size());
      bool reported = false;
      for (size_t k = 0; k < n && !reported; ++k) {
        if (refSeq[k].second == seq[k].second)
          continue;
        report(DiagKind::AllReduceMismatch, other, seq[k].first,
               rankName(other) + ": its " + ordinal(k + 1) +
                   " all-reduce with group " + formatSet(group) + " is " +
                   s_.ranks[other][seq[k].first].str() + ", but " +
                   rankName(ref) + "'s is " +
                   s_.ranks[ref][refSeq[k].first].str(),
               {{other, seq[k].first}, {ref, refSeq[k].first}});
        reported = true;
      }
      if (reported || refSeq.size() == seq.size())
        continue;
      bool refLonger = refSeq.size() > seq.size();
      int longRank = refLonger ? ref : other,
          shortRank = refLonger ? other : ref;
      const Seq &longer = refLonger ? refSeq : seq;
      int idx = longer[n].first;
      report(DiagKind::AllReduceMismatch, longRank, idx,
             rankName(longRank) + " runs " + std::to_string(longer.size()) +
                 " all-reduces with group " + formatSet(group) + ", " +
                 rankName(shortRank) + " runs " +
                 std::to_string(std::min(refSeq.size(), seq.size())) + ": " +
                 rankName(longRank) + "'s " + s_.ranks[longRank][idx].str() +
                 " has no partner on " + rankName(shortRank));
    }
  }

  if (!options_.requireAllReduce)
    return;
  for (int st = 0; st < numStages; ++st) {
    if (groups_[st].size() < 2)
      continue;
    for (int r : groups_[st]) {
      if (r >= s_.numRanks())
        continue;
      // At least once: a stage may also ride in a tied parameter's bucket
      // (the embedding shared by the first and last stage) besides its own.
      if (reducedCount[r].count(st))
        continue;
      report(DiagKind::AllReduceMissing, r, -1,
             rankName(r) + " never all-reduces stage " + std::to_string(st) +
                 ", which is replicated on ranks " + formatSet(groups_[st]));
    }
  }
}

void Verifier::checkChannelOrder(const CommProgram &program) {
  auto name = [&](int t) {
    const Transfer &tr = program.transfers[t];
    return std::string(tr.gradient ? "the gradient of "
                                   : "the activation of ") +
           tr.producer().str();
  };
  for (const ChannelMismatch &mm : checkChannels(program)) {
    std::string channel =
        "channel " + rankName(mm.src) + " -> " + rankName(mm.dst) + ": ";
    std::string pos = ordinal(mm.position + 1);
    int consumer =
        mm.recvItem >= 0 ? program.ranks[mm.dst][mm.recvItem].actionIndex : -1;
    int producer =
        mm.sendItem >= 0 ? program.ranks[mm.src][mm.sendItem].actionIndex : -1;
    std::vector<ActionSite> marks;
    if (consumer >= 0)
      marks.push_back({mm.dst, consumer});
    if (producer >= 0)
      marks.push_back({mm.src, producer});
    std::string message;
    if (mm.sendTransfer < 0)
      message = channel + rankName(mm.dst) + "'s " + pos + " receive expects " +
                name(mm.recvTransfer) + ", but " + rankName(mm.src) +
                " sends nothing more";
    else if (mm.recvTransfer < 0)
      message = channel + rankName(mm.src) + "'s " + pos + " send carries " +
                name(mm.sendTransfer) + ", but " + rankName(mm.dst) +
                " receives nothing more";
    else
      message = channel + rankName(mm.src) + "'s " + pos + " send carries " +
                name(mm.sendTransfer) + ", but " + rankName(mm.dst) + "'s " +
                pos + " receive expects " + name(mm.recvTransfer) +
                " (the two ranks order this channel differently)";
    report(DiagKind::ChannelOrder, consumer >= 0 ? mm.dst : mm.src,
           consumer >= 0 ? consumer : producer, message, marks);
  }
}

void Verifier::checkDeadlock(const CommProgram &program) {
  // Whether the program runs, not how: no timeline.
  SimulateOptions options;
  options.recordTimeline = false;
  CostModel unit;
  unit.transport = options_.transport;
  Result<SimResult> sim = simulate(s_, program, unit, options);
  if (!sim) {
    report(DiagKind::Malformed, -1, -1,
           "the schedule cannot be simulated: " + sim.error);
    return;
  }
  if (!sim.value->deadlocked)
    return;
  std::vector<ActionSite> marks;
  for (const BlockedRank &b : sim.value->blocked)
    marks.push_back({b.rank, b.actionIndex});
  for (const BlockedRank &b : sim.value->cycle)
    marks.push_back({b.rank, b.actionIndex});
  std::string message = sim.value->deadlockReport();
  if (!message.empty() && message.back() == '\n')
    message.pop_back();
  const BlockedRank &first = sim.value->blocked.front();
  report(DiagKind::Deadlock, first.rank, first.actionIndex, message, marks);
}

std::vector<Diagnostic> Verifier::run(const CommProgram *given) {
  if (!checkShape())
    return diags_;
  groups_ = s_.placement.replicaGroups();
  checkActions();
  bool structural = !diags_.empty();
  checkAllReduces();
  if (structural)
    return diags_;
  // Only stage problems in ARs that the simulator would refuse stop here.
  for (const Diagnostic &d : diags_)
    if (d.kind == DiagKind::OutOfRange ||
        d.kind == DiagKind::AllReduceForeignStage)
      return diags_;

  if (!options_.checkExecution)
    return diags_;
  CommProgram lowered;
  if (!given) {
    Result<CommProgram> program = lowerComms(s_);
    if (!program) {
      report(DiagKind::Malformed, -1, -1,
             "the schedule cannot be lowered: " + program.error);
      return diags_;
    }
    lowered = std::move(*program.value);
    given = &lowered;
  }
  checkChannelOrder(*given);
  checkDeadlock(*given);
  return diags_;
}

} // namespace

std::vector<Diagnostic> verify(const Schedule &schedule,
                               const VerifyOptions &options) {
  return Verifier(schedule, options).run(nullptr);
}

std::vector<Diagnostic> verify(const Schedule &schedule,
                               const CommProgram &program,
                               const VerifyOptions &options) {
  return Verifier(schedule, options).run(&program);
}

} // namespace bitpipe::sched
