//===- Comms.cpp - Point-to-point transfers implied by a schedule ---------===//

#include "bitpipe/Schedule/Comms.h"

#include "bitpipe/Schedule/Dependencies.h"
#include "bitpipe/Schedule/Describe.h"
#include "bitpipe/Schedule/GridText.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <utility>

namespace bitpipe::sched {

//===----------------------------------------------------------------------===//
// ActionTable
//===----------------------------------------------------------------------===//

ActionTable::ActionTable(int numMicrobatches, int numStages)
    : numMicrobatches_(numMicrobatches < 0 ? 0 : numMicrobatches),
      numStages_(numStages < 0 ? 0 : numStages),
      sites_(3 * static_cast<size_t>(numMicrobatches_) * numStages_) {}

ActionTable ActionTable::build(const Schedule &schedule) {
  ActionTable table(schedule.numMicrobatches, schedule.placement.numStages);
  for (int r = 0; r < schedule.numRanks(); ++r) {
    const std::vector<Action> &actions = schedule.ranks[r];
    for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
      const Action &a = actions[i];
      if (!table.inRange(a))
        continue;
      ActionSite &site = table.at(a.kind, a.microbatch, a.stage);
      if (!site.found())
        site = {r, i};
    }
  }
  return table;
}

bool ActionTable::inRange(const Action &action) const {
  return action.kind != ActionKind::AllReduce && action.microbatch >= 0 &&
         action.microbatch < numMicrobatches_ && action.stage >= 0 &&
         action.stage < numStages_;
}

int ActionTable::slot(ActionKind kind, int microbatch, int stage) const {
  int k = kind == ActionKind::Forward    ? 0
          : kind == ActionKind::Backward ? 1
                                         : 2;
  return (k * numMicrobatches_ + microbatch) * numStages_ + stage;
}

const ActionSite &ActionTable::at(ActionKind kind, int microbatch,
                                  int stage) const {
  return sites_[slot(kind, microbatch, stage)];
}

ActionSite &ActionTable::at(ActionKind kind, int microbatch, int stage) {
  return sites_[slot(kind, microbatch, stage)];
}

//===----------------------------------------------------------------------===//
// Transfer, CommAction, CommProgram
//===----------------------------------------------------------------------===//

Action Transfer::producer() const {
  return gradient ? Action::backward(microbatch, fromStage)
                  : Action::forward(microbatch, fromStage);
}

Action Transfer::consumer() const {
  return gradient ? Action::backward(microbatch, toStage)
                  : Action::forward(microbatch, toStage);
}

std::string CommAction::str() const {
  // The transfer is named after the action whose output it carries.
  std::string name = action.microbatch >= 0
                         ? std::to_string(action.microbatch) + ".s" +
                               std::to_string(action.stage)
                         : "";
  std::string to = "->P" + std::to_string(peer);
  std::string from = "<-P" + std::to_string(peer);
  switch (kind) {
  case CommKind::Compute:
  case CommKind::AllReduce:
    return action.str();
  case CommKind::SendF:
    return "SEND_F" + name + to;
  case CommKind::RecvF:
    return "RECV_F" + name + from;
  case CommKind::SendB:
    return "SEND_B" + name + to;
  case CommKind::RecvB:
    return "RECV_B" + name + from;
  case CommKind::LocalCopyF:
    return "COPY_F" + name;
  case CommKind::LocalCopyB:
    return "COPY_B" + name;
  }
  return "?";
}

bool isCommActionName(const std::string &name) {
  if (parseAction(name))
    return true;
  // A transfer: its kind, the action it carries ("3.s1", or nothing), and
  // for a send or receive the peer.
  static constexpr std::pair<const char *, const char *> kinds[] = {
      {"SEND_F", "->P"}, {"RECV_F", "<-P"}, {"SEND_B", "->P"},
      {"RECV_B", "<-P"}, {"COPY_F", ""},    {"COPY_B", ""}};
  for (const auto &[prefix, arrow] : kinds) {
    if (name.rfind(prefix, 0) != 0)
      continue;
    std::string rest = name.substr(std::strlen(prefix));
    int microbatch = 0, stage = 0, consumed = 0;
    if (std::sscanf(rest.c_str(), "%d.s%d%n", &microbatch, &stage, &consumed) ==
        2)
      rest = rest.substr(consumed);
    if (!*arrow)
      return rest.empty();
    int peer = 0;
    consumed = 0;
    std::string format = std::string(arrow) + "%d%n";
    return rest.rfind(arrow, 0) == 0 &&
           std::sscanf(rest.c_str(), format.c_str(), &peer, &consumed) == 1 &&
           static_cast<size_t>(consumed) == rest.size();
  }
  return false;
}

std::string CommProgram::format() const {
  std::string out;
  for (size_t r = 0; r < ranks.size(); ++r) {
    out += "P" + std::to_string(r) + ":";
    for (const CommAction &c : ranks[r])
      out += " " + c.str();
    out += "\n";
  }
  return out;
}

//===----------------------------------------------------------------------===//
// lowerComms
//===----------------------------------------------------------------------===//

Result<CommProgram> lowerComms(const Schedule &schedule,
                               TransferStreams streams) {
  Result<CommProgram> result;
  const int numStages = schedule.placement.numStages;
  ActionTable table(schedule.numMicrobatches, numStages);

  // Locate every compute action; refuse what cannot be lowered.
  for (int r = 0; r < schedule.numRanks(); ++r) {
    const std::vector<Action> &actions = schedule.ranks[r];
    for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
      const Action &a = actions[i];
      if (a.kind == ActionKind::AllReduce)
        continue;
      if (!table.inRange(a)) {
        result.error =
            "rank " + std::to_string(r) + ": " + a.str() +
            " is out of range (" +
            quantity(schedule.numMicrobatches, "micro-batch", "micro-batches") +
            ", " + quantity(numStages, "stage", "stages") + ")";
        return result;
      }
      ActionSite &site = table.at(a.kind, a.microbatch, a.stage);
      if (site.found()) {
        result.error = "rank " + std::to_string(r) + ": " + describe(a) +
                       " runs twice (also on rank " +
                       std::to_string(site.rank) + ")";
        return result;
      }
      site = {r, i};
    }
  }

  CommProgram program;
  program.ranks.resize(schedule.numRanks());
  // At most one transfer into each compute action.
  size_t numActions = 0;
  for (const std::vector<Action> &actions : schedule.ranks)
    numActions += actions.size();
  program.transfers.reserve(numActions);
  // For every action, the transfer that feeds it and the one it produces
  // (-1: none), by rank and action index.
  std::vector<std::vector<int>> inputOf(schedule.numRanks()),
      outputOf(schedule.numRanks());
  for (int r = 0; r < schedule.numRanks(); ++r) {
    inputOf[r].assign(schedule.ranks[r].size(), -1);
    outputOf[r].assign(schedule.ranks[r].size(), -1);
  }

  auto needs = [&](int r, const Action &consumer, const Action &input,
                   ActionSite &site) {
    site = table.at(input.kind, input.microbatch, input.stage);
    if (site.found())
      return true;
    result.error = "rank " + std::to_string(r) + ": " + describe(consumer) +
                   " needs the " + describe(input) + ", which no rank runs";
    return false;
  };

  for (int r = 0; r < schedule.numRanks(); ++r) {
    const std::vector<Action> &actions = schedule.ranks[r];
    for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
      const Action &a = actions[i];
      ActionInputs inputs = inputsOf(a, numStages);
      ActionSite site;
      if (inputs.sameStage && !needs(r, a, *inputs.sameStage, site))
        return result;
      if (!inputs.crossStage)
        continue;
      const Action &producer = *inputs.crossStage;
      if (!needs(r, a, producer, site))
        return result;
      Transfer t;
      t.gradient = a.kind == ActionKind::Backward;
      t.microbatch = a.microbatch;
      t.fromStage = producer.stage;
      t.toStage = a.stage;
      t.src = site.rank;
      t.producerIndex = site.index;
      t.dst = r;
      t.consumerIndex = i;
      int id = static_cast<int>(program.transfers.size());
      program.transfers.push_back(t);
      inputOf[r][i] = id;
      outputOf[t.src][t.producerIndex] = id;
    }
  }

  // Emit: receive, compute, then send (or local copy), per action.
  for (int r = 0; r < schedule.numRanks(); ++r) {
    const std::vector<Action> &actions = schedule.ranks[r];
    std::vector<CommAction> &out = program.ranks[r];
    // Sized first: at D=64, N=512 a rank has some 6,000 items.
    size_t items = actions.size();
    for (size_t i = 0; i < actions.size(); ++i)
      items +=
          (inputOf[r][i] >= 0 && !program.transfers[inputOf[r][i]].local()) +
          (outputOf[r][i] >= 0);
    out.reserve(items);
    for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
      const Action &a = actions[i];
      if (int in = inputOf[r][i]; in >= 0 && !program.transfers[in].local()) {
        const Transfer &t = program.transfers[in];
        out.push_back({t.gradient ? CommKind::RecvB : CommKind::RecvF,
                       t.producer(), i, in, t.src});
      }
      out.push_back({a.kind == ActionKind::AllReduce ? CommKind::AllReduce
                                                     : CommKind::Compute,
                     a, i, -1, -1});
      if (int o = outputOf[r][i]; o >= 0) {
        const Transfer &t = program.transfers[o];
        CommKind kind =
            t.local()
                ? (t.gradient ? CommKind::LocalCopyB : CommKind::LocalCopyF)
                : (t.gradient ? CommKind::SendB : CommKind::SendF);
        out.push_back({kind, a, i, o, t.local() ? -1 : t.dst});
      }
    }
  }
  assignBatches(program, streams);
  result.value = std::move(program);
  return result;
}

void assignBatches(CommProgram &program, TransferStreams streams) {
  program.streams = streams;
  for (std::vector<CommAction> &items : program.ranks) {
    int batch = -1;
    // Shared: a batch stays open until a compute or all-reduce step (local
    // copies are no NCCL call: they neither join nor end one).
    bool open = false;
    for (CommAction &c : items) {
      if (c.kind == CommKind::Compute || c.kind == CommKind::AllReduce) {
        open = false;
        continue;
      }
      if (!c.isSendOrRecv())
        continue;
      if (streams == TransferStreams::Channel || !open)
        ++batch;
      open = true;
      c.batch = batch;
    }
  }
}

//===----------------------------------------------------------------------===//
// checkChannels
//===----------------------------------------------------------------------===//

std::vector<ChannelMismatch> checkChannels(const CommProgram &program) {
  // (src,dst) -> ordered (transfer, item index) of sends and of receives.
  using Seq = std::vector<std::pair<int, int>>;
  std::map<std::pair<int, int>, std::pair<Seq, Seq>> channels;
  for (int r = 0; r < static_cast<int>(program.ranks.size()); ++r) {
    const std::vector<CommAction> &items = program.ranks[r];
    for (int k = 0; k < static_cast<int>(items.size()); ++k) {
      const CommAction &c = items[k];
      bool send = c.kind == CommKind::SendF || c.kind == CommKind::SendB;
      bool recv = c.kind == CommKind::RecvF || c.kind == CommKind::RecvB;
      if (send)
        channels[{r, c.peer}].first.push_back({c.transfer, k});
      else if (recv)
        channels[{c.peer, r}].second.push_back({c.transfer, k});
    }
  }
  std::vector<ChannelMismatch> mismatches;
  for (const auto &[key, seqs] : channels) {
    const Seq &sends = seqs.first, &recvs = seqs.second;
    size_t n = std::max(sends.size(), recvs.size());
    for (size_t p = 0; p < n; ++p) {
      int sendT = p < sends.size() ? sends[p].first : -1;
      int recvT = p < recvs.size() ? recvs[p].first : -1;
      if (sendT == recvT)
        continue;
      ChannelMismatch mm;
      mm.src = key.first;
      mm.dst = key.second;
      mm.position = static_cast<int>(p);
      mm.sendTransfer = sendT;
      mm.recvTransfer = recvT;
      mm.sendItem = p < sends.size() ? sends[p].second : -1;
      mm.recvItem = p < recvs.size() ? recvs[p].second : -1;
      // Everything after the first disagreement is shifted: one report.
      mismatches.push_back(mm);
      break;
    }
  }
  return mismatches;
}

} // namespace bitpipe::sched
