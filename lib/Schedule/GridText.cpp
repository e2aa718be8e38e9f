//===- GridText.cpp - The text grid of a schedule, both ways --------------===//

#include "bitpipe/Schedule/GridText.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace bitpipe::sched {

std::string formatRank(int rank, const std::vector<Action> &actions,
                       const std::vector<int> &marked) {
  std::string line = "P" + std::to_string(rank) + ":";
  for (size_t i = 0; i < actions.size(); ++i) {
    std::string step = actions[i].str();
    bool mark =
        std::count(marked.begin(), marked.end(), static_cast<int>(i)) != 0;
    line += " " + (mark ? ">>" + step + "<<" : step);
  }
  return line;
}

std::string formatGrid(const RankPrograms &ranks,
                       const std::vector<ActionSite> &marks) {
  std::string text;
  for (size_t r = 0; r < ranks.size(); ++r) {
    std::vector<int> marked;
    for (const ActionSite &m : marks)
      if (m.rank == static_cast<int>(r))
        marked.push_back(m.index);
    text += formatRank(static_cast<int>(r), ranks[r], marked) + "\n";
  }
  return text;
}

std::string formatGrid(const Schedule &schedule,
                       const std::vector<ActionSite> &marks) {
  return formatGrid(schedule.ranks, marks);
}

namespace {

/// Reads a non-negative decimal at text[pos...]; advances pos. Rejects
/// empty numbers and values that do not fit an int.
bool readNumber(const std::string &text, size_t &pos, int &out) {
  size_t start = pos;
  long long v = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    v = v * 10 + (text[pos] - '0');
    if (v > 1000000000)
      return false;
    ++pos;
  }
  out = static_cast<int>(v);
  return pos > start;
}

Result<Action> bad(const std::string &token, const std::string &why) {
  return Result<Action>::failure("'" + token + "': " + why);
}

} // namespace

Result<Action> parseAction(const std::string &token) {
  if (token.rfind("AR(", 0) == 0) {
    if (token.back() != ')')
      return bad(token, "an all-reduce ends with ')'");
    std::vector<int> stages;
    size_t pos = 3;
    while (true) {
      int s;
      if (!readNumber(token, pos, s))
        return bad(token, "expected a stage number at offset " +
                              std::to_string(pos));
      stages.push_back(s);
      if (token[pos] == ')')
        break;
      if (token[pos] != ',')
        return bad(token, "expected ',' or ')' at offset " +
                              std::to_string(pos));
      ++pos;
    }
    if (pos + 1 != token.size())
      return bad(token, "trailing characters after ')'");
    for (size_t i = 1; i < stages.size(); ++i)
      if (stages[i - 1] >= stages[i])
        return bad(token, "all-reduce stages must be sorted and distinct");
    return Result<Action>::success(Action::allReduce(std::move(stages)));
  }

  if (token.empty())
    return bad(token, "empty action");
  ActionKind kind;
  switch (token[0]) {
  case 'F':
    kind = ActionKind::Forward;
    break;
  case 'B':
    kind = ActionKind::Backward;
    break;
  case 'W':
    kind = ActionKind::WeightGrad;
    break;
  default:
    return bad(token, "expected F, B, W or AR(...)");
  }
  size_t pos = 1;
  int mb, stage;
  if (!readNumber(token, pos, mb))
    return bad(token, "expected a micro-batch number after '" +
                          token.substr(0, 1) + "'");
  if (token.compare(pos, 2, ".s") != 0)
    return bad(token, "expected '.s' after the micro-batch number");
  pos += 2;
  if (!readNumber(token, pos, stage))
    return bad(token, "expected a stage number after '.s'");
  if (pos != token.size())
    return bad(token, "trailing characters after the stage number");
  return Result<Action>::success(Action{kind, mb, stage, {}});
}

Result<RankPrograms> parseGrid(const std::string &text) {
  RankPrograms ranks;
  std::istringstream lines(text);
  std::string line;
  int lineNo = 0;
  auto fail = [&](const std::string &why) {
    return Result<RankPrograms>::failure("line " + std::to_string(lineNo) +
                                         ": " + why);
  };
  while (std::getline(lines, line)) {
    ++lineNo;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    std::istringstream tokens(line);
    std::string head;
    if (!(tokens >> head))
      continue; // Blank line.
    size_t pos = 1;
    int rank;
    if (head[0] != 'P' || !readNumber(head, pos, rank) ||
        pos + 1 != head.size() || head[pos] != ':')
      return fail("expected 'P<rank>:' at the start, got '" + head + "'");
    if (rank != static_cast<int>(ranks.size()))
      return fail("expected rank P" + std::to_string(ranks.size()) +
                  ", got P" + std::to_string(rank));
    std::vector<Action> actions;
    std::string token;
    int tokenNo = 0;
    while (tokens >> token) {
      ++tokenNo;
      Result<Action> a = parseAction(token);
      if (!a)
        return fail("token " + std::to_string(tokenNo) + " " + a.error);
      actions.push_back(std::move(*a));
    }
    ranks.push_back(std::move(actions));
  }
  return Result<RankPrograms>::success(std::move(ranks));
}

} // namespace bitpipe::sched
