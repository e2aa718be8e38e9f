//===- BaselinesTable.cpp - The baselines at their best -------------------===//
//
// Every baseline in its best form next to the earlier ones, at D in {4, 8,
// 16} and N in {D, 2D, 4D, 8D}, F=1, B=2 per chunk of a D-stage model (a chunk
// of interleaved-1f1b with v chunks per device costs 1/v of that, so every
// schedule does the same work), free communication:
//
//  - makespan and bubble ratio, from the simulator;
//  - peak in-flight activations per rank, in chunks (one per (micro-batch,
//    stage) whose F is done and whose last reader, B or, split, W, is not)
//    and in stages of the D-stage model (chunks x D / stages: an
//    interleaved chunk holds 1/v of a stage);
//  - p2p volume: transfers between ranks (activations and gradients, each
//    one boundary tensor; local hand-offs are free), from the simulator.
//
// 1f1b also runs under a cap on the micro-batches in flight (max-in-flight
// = D/2, D/4, 1: docs/schedules.md, "Fewer micro-batches in flight"), the
// memory it saves against the makespan it costs.
//
// chimera is the registered order (ChimeraOrder::Best); its two candidate
// orders are listed too, so what it gains over each can be read off, and
// bitpipe, which the baselines are compared with, closes the table with the
// schedules that split the backward (zb-h1, bitpipe-zb, bitpipe-periodic-zb,
// zbv), at B = W = 1 per stage: the same work, B + W = 2 (docs/zero-bubble.md
// has their own table, in its slot units).
//
//===----------------------------------------------------------------------===//

#include "BaselinesTable.h"

#include "bitpipe/Schedule/CostModel.h"
#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Schedule/Simulator.h"
#include "bitpipe/Schedule/Verifier.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using namespace bitpipe::sched;

namespace bitpipe::bench {

namespace {

struct Row {
  std::string label;
  std::function<Result<Schedule>(int D, int N)> generate;
};

std::vector<Row> rows() {
  auto registered = [](const char *name, int v) {
    return [name, v](int D, int N) {
      ScheduleOptions request{name, D, N};
      if (v > 0)
        request.chunksPerDevice = v;
      return generateSchedule(request);
    };
  };
  // 1F1B under a cap on micro-batches in flight: capOf(D) per rank.
  auto capped = [](int (*capOf)(int D)) {
    return [capOf](int D, int N) {
      ScheduleOptions request{"1f1b", D, N};
      request.maxInFlight = capOf(D);
      return generateSchedule(request);
    };
  };
  auto chimera = [](ChimeraOrder order) {
    return [order](int D, int N) { return generateChimera(D, N, order); };
  };
  return {
      {"gpipe", registered("gpipe", 0)},
      {"1f1b", registered("1f1b", 0)},
      {"1f1b max-in-flight=D/2", capped([](int D) { return D / 2; })},
      {"1f1b max-in-flight=D/4", capped([](int D) { return D / 4; })},
      {"1f1b max-in-flight=1", capped([](int) { return 1; })},
      {"interleaved-1f1b v=2", registered("interleaved-1f1b", 2)},
      {"interleaved-1f1b v=3", registered("interleaved-1f1b", 3)},
      {"interleaved-1f1b v=4", registered("interleaved-1f1b", 4)},
      {"chimera, alternating (before)", chimera(ChimeraOrder::Alternating)},
      {"chimera, critical path", chimera(ChimeraOrder::CriticalPath)},
      {"chimera (registered)", registered("chimera", 0)},
      // What they are compared with: 2D chunks of half a stage each.
      {"bitpipe", registered("bitpipe", 0)},
      {"bitpipe-periodic", registered("bitpipe-periodic", 0)},
      {"zb-h1", registered("zb-h1", 0)},
      {"bitpipe-zb", registered("bitpipe-zb", 0)},
      {"bitpipe-periodic-zb", registered("bitpipe-periodic-zb", 0)},
      {"zbv", registered("zbv", 0)},
  };
}

/// F=1, B=2 per D-stage model stage (split: B=1, W=1); every boundary
/// tensor one unit.
CostModel costsFor(const Schedule &s, int D) {
  CostModel cost;
  const double share = static_cast<double>(D) / s.placement.numStages;
  cost.unitForward = share;
  cost.unitBackward = (s.splitBackward ? 1 : 2) * share;
  cost.unitWeightGrad = share;
  cost.boundaryBytes.assign(s.placement.numStages, 1.0);
  return cost;
}

/// Makespan of Chimera's `order` with F=1 and backward cost `backward`, or
/// -1 after printing why it failed.
double chimeraMakespan(int D, int N, ChimeraOrder order, double backward) {
  Result<Schedule> s = generateChimera(D, N, order);
  if (!s) {
    std::fprintf(stderr, "chimera D=%d N=%d: %s\n", D, N, s.error.c_str());
    return -1;
  }
  CostModel cost;
  cost.unitBackward = backward;
  Result<SimResult> sim = simulate(*s, cost);
  if (!sim || sim->deadlocked) {
    std::fprintf(stderr, "chimera D=%d N=%d cannot be simulated: %s\n", D, N,
                 sim ? sim->deadlockReport().c_str() : sim.error.c_str());
    return -1;
  }
  return sim->makespan;
}

/// The registered order is built for B = 2F; with F = B (the costs of
/// Chimera's closed form, makespan 2N+D-2) the alternating order is the
/// best one. Both cost models, every order.
bool printChimeraEqualCosts() {
  std::printf("### Chimera's orders under both cost models (makespans)\n\n");
  std::printf("| D | N | F=B=1: alternating | F=B=1: critical path | F=B=1: "
              "registered | 2N+D-2 | F=1,B=2: alternating | F=1,B=2: "
              "critical path | F=1,B=2: registered | 3(N+D/2-1) |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  bool allOk = true;
  for (int D : {4, 8, 16})
    for (int N : {D, 2 * D, 4 * D}) {
      std::printf("| %d | %d |", D, N);
      for (double backward : {1.0, 2.0}) {
        for (ChimeraOrder order :
             {ChimeraOrder::Alternating, ChimeraOrder::CriticalPath,
              ChimeraOrder::Best}) {
          double makespan = chimeraMakespan(D, N, order, backward);
          allOk = allOk && makespan >= 0;
          std::printf(" %g |", makespan);
        }
        // The closed form (F=B) and the lower bound (B=2F; the optimum
        // where the search of OptimalSchedule.h reaches, N >= 2D).
        std::printf(" %d |",
                    backward == 1.0 ? 2 * N + D - 2 : 3 * (N + D / 2 - 1));
      }
      std::printf("\n");
    }
  std::printf("\n");
  return allOk;
}

} // namespace

bool printBaselinesTable() {
  std::printf("### Baselines at their best (F=1, B=2 per stage of a D-stage "
              "model, free communication)\n\n");
  std::printf("| schedule | D | N | makespan | bubble | peak in-flight "
              "(chunks) | peak in-flight (stages) | p2p transfers |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  bool allOk = true;
  // Up to N = 8D: where the steady states take over from the fill and the
  // drain (bitpipe-periodic against the reference, docs/bitpipe-order.md).
  for (const Row &row : rows())
    for (int D : {4, 8, 16})
      for (int N : {D, 2 * D, 4 * D, 8 * D}) {
        Result<Schedule> s = row.generate(D, N);
        std::string why;
        if (!s)
          why = s.error;
        else if (std::vector<Diagnostic> d = verify(*s); !d.empty())
          why = "does not verify:\n" + formatDiagnostics(d);
        Result<SimResult> sim = Result<SimResult>::failure(why);
        if (why.empty()) {
          sim = simulate(*s, costsFor(*s, D));
          if (!sim || sim->deadlocked)
            why = sim ? sim->deadlockReport() : sim.error;
        }
        if (!why.empty()) {
          std::fprintf(stderr, "%s D=%d N=%d: %s\n", row.label.c_str(), D, N,
                       why.c_str());
          std::printf("| %s | %d | %d | failed | - | - | - | - |\n",
                      row.label.c_str(), D, N);
          allOk = false;
          continue;
        }
        // Until the last reader of a stash: the W where the backward is
        // split (the simulator's peakInFlight counts to the B).
        int peak = 0;
        for (const std::vector<Action> &rank : s->ranks)
          peak = std::max(peak, peakStashes(rank, s->splitBackward));
        std::printf("| %s | %d | %d | %g | %.4f | %d | %g | %g |\n",
                    row.label.c_str(), D, N, sim->makespan, sim->bubbleRatio,
                    peak,
                    static_cast<double>(peak) * D / s->placement.numStages,
                    sim->totalBytesSent);
      }
  std::printf("\n");
  return printChimeraEqualCosts() && allOk;
}

} // namespace bitpipe::bench
