//===- EvaluateImpl.h - The planner's evaluation, for its search *- C++ -*-===//
//
// What Search.cpp shares with Evaluate.cpp: the evaluation of a candidate
// whose stages are already cut (the search cuts once per micro-batch size
// and stage count, and reuses the cut).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_LIB_PLAN_EVALUATEIMPL_H
#define BITPIPE_LIB_PLAN_EVALUATEIMPL_H

#include "bitpipe/Plan/Planner.h"
#include "bitpipe/Schedule/Registry.h"

namespace bitpipe::plan {

/// "bitpipe D=8 dp=4 mb=1 N=16", for messages.
std::string describe(const PlanConfig &config);

/// The registry's request for `config`, checked and completed.
sched::Result<sched::ScheduleOptions> scheduleRequest(const PlanConfig &config);

/// The model's forward and backward FLOPs for one micro-batch of its size.
double modelFlopsPerMicrobatch(const ModelProfile &model);

/// evaluate(), given the placement and the cut for it, and what a rank may
/// use (the cap less the headroom).
sched::Result<Estimate>
evaluateStages(PlanConfig config, const ModelProfile &model,
               const std::vector<StageProfile> &stages,
               const sched::Placement &placement, const sched::Cluster &cluster,
               const PlanRequest &request, double memoryBudget,
               Rejection *reason, Timeline *timeline = nullptr);

} // namespace bitpipe::plan

#endif // BITPIPE_LIB_PLAN_EVALUATEIMPL_H
