//===- Manifest.cpp - The compiled program's manifest, parsed ---*- C++ -*-===//

#include "Manifest.h"

#include "bitpipe/base/ManifestFormat.h"
#include "core/Dropout.h"
#include "core/Tensor.h"

#include <algorithm>
#include <map>
#include <set>

namespace bitpipe::runtime {

// Checked, though the parser only makes kinds from the tables: a message
// about a corrupt value must not read past them.
const char *roleKindName(RoleKind kind) {
  int k = static_cast<int>(kind);
  return k >= 0 && k < BP_NUM_ROLE_KINDS ? bp_role_kind_names[k] : "?";
}

const char *functionKindName(FunctionKind kind) {
  int k = static_cast<int>(kind);
  return k >= 0 && k < BP_NUM_FUNCTION_KINDS ? bp_function_kind_names[k] : "?";
}

const char *targetKindName(TargetKind kind) {
  int k = static_cast<int>(kind);
  return k >= 0 && k < BP_NUM_TARGET_KINDS ? bp_target_kind_names[k] : "?";
}

const char *precisionName(Precision precision) {
  int k = static_cast<int>(precision);
  return k >= 0 && k < BP_NUM_PRECISIONS ? bp_precision_names[k] : "?";
}

bool RankSpec::holds(int param) const {
  return std::find(params.begin(), params.end(), param) != params.end();
}

int Manifest::findParam(std::string_view name) const {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].name == name)
      return static_cast<int>(i);
  return -1;
}

int Manifest::ownerRank(int param) const {
  // Copy 0 holds world ranks 0 .. devices - 1, the lowest of all.
  for (size_t p = 0; p < ranks.size(); ++p)
    if (ranks[p].holds(param))
      return worldRank(0, static_cast<int>(p));
  return -1;
}

std::vector<int> Manifest::worldGroup(int g) const {
  std::vector<int> world;
  const std::vector<int> &members = groups[static_cast<size_t>(g)];
  world.reserve(members.size() * static_cast<size_t>(schedule.dataParallel));
  // Copy-major over increasing pipeline ranks: increasing world ranks.
  for (int c = 0; c < schedule.dataParallel; ++c)
    for (int p : members)
      world.push_back(worldRank(c, p));
  return world;
}

bool Manifest::syncsInTwoLevels(int g) const {
  return base::syncsInTwoLevels(
      schedule.gradientSync,
      static_cast<int64_t>(groups[static_cast<size_t>(g)].size()),
      schedule.dataParallel);
}

base::TwoLevelGroups Manifest::twoLevelGroups(int g) const {
  return base::twoLevelGroups(groups[static_cast<size_t>(g)], pipelineRanks(),
                              static_cast<int>(schedule.dataParallel));
}

std::vector<Channel> Manifest::worldChannels() const {
  std::vector<Channel> world;
  world.reserve(schedule.channels.size() *
                static_cast<size_t>(schedule.dataParallel));
  for (int c = 0; c < schedule.dataParallel; ++c)
    for (const auto &[from, to] : schedule.channels)
      world.push_back({worldRank(c, from), worldRank(c, to)});
  return world;
}

namespace {

namespace key = manifest::key;
using manifest::indexed;

Status bad(const std::string &where, const std::string &what) {
  return manifest::error(where, what);
}

/// "<where>.<key>".
std::string at(const std::string &where, const char *key) {
  return where + "." + key;
}

Status checkTarget(const manifest::Target &doc, TargetSpec *t) {
  t->kind = static_cast<TargetKind>(doc.name);
  t->precision = static_cast<Precision>(doc.precision);
  // bf16 kernels exist on the device only (runtime.h's CPU kernels are
  // fp32): a CPU program in bf16 would be misread by every kernel.
  if (t->precision == Precision::Bf16 && t->kind != TargetKind::Cuda)
    return bad(at(key::Target, key::Precision),
               std::string("bf16 needs the cuda target, not ") +
                   targetKindName(t->kind));
  return Status::ok();
}

Status checkModel(const manifest::Model &doc, ModelSpec *m) {
  m->name = doc.name;
  m->family = static_cast<ModelFamily>(doc.family);
  m->vocab = doc.vocab;
  m->seqLen = doc.seqLen;
  m->microbatchSize = doc.microbatchSize;
  if (doc.maskToken) {
    if (*doc.maskToken >= m->vocab)
      return bad(at(key::Model, key::MaskToken),
                 formatString("%lld is not below the vocabulary size %lld",
                              static_cast<long long>(*doc.maskToken),
                              static_cast<long long>(m->vocab)));
    m->maskToken = static_cast<int32_t>(*doc.maskToken);
  } else if (m->family == ModelFamily::Bert) {
    return bad(key::Model, std::string("a bert model needs \"") +
                               key::MaskToken + "\" (the [MASK] id)");
  }
  m->heads = doc.heads.value_or(0);
  m->maxPositions = doc.maxPositions.value_or(0);
  m->normEpsilon = doc.normEpsilon.value_or(0);
  m->ropeTheta = doc.ropeTheta.value_or(0);
  if (doc.gelu)
    m->gelu = static_cast<GeluForm>(*doc.gelu);
  if (doc.normPosition)
    m->normPosition = static_cast<NormPosition>(*doc.normPosition);
  for (auto [key, value, slot] :
       {std::tuple{key::EmbeddingDropout, doc.embeddingDropout,
                   &m->embeddingDropout},
        std::tuple{key::AttentionDropout, doc.attentionDropout,
                   &m->attentionDropout},
        std::tuple{key::ResidualDropout, doc.residualDropout,
                   &m->residualDropout}}) {
    if (!value)
      continue;
    if (!(*value > 0 && *value < 1))
      return bad(at(key::Model, key), formatString("%g is not a dropout "
                                                   "probability in (0, 1)",
                                                   *value));
    *slot = *value;
  }
  return Status::ok();
}

/// schedule.channels: [sender, receiver] pairs of pipeline ranks, two
/// distinct ones, the list sorted and without repeats (program.h).
Status checkChannels(const std::vector<std::pair<int64_t, int64_t>> &list,
                     int64_t devices, std::vector<Channel> *out) {
  const std::string where = at(key::Schedule, key::Channels);
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string here = indexed(where, i);
    const auto [from, to] = list[i];
    for (int64_t r : {from, to})
      if (r < 0 || r >= devices)
        return bad(here, formatString("rank %lld is not a pipeline rank (in "
                                      "[0, devices %lld))",
                                      static_cast<long long>(r),
                                      static_cast<long long>(devices)));
    if (from == to)
      return bad(here, formatString("a channel from pipeline rank %lld to "
                                    "itself; expected two distinct ranks",
                                    static_cast<long long>(from)));
    const Channel c{static_cast<int>(from), static_cast<int>(to)};
    if (!out->empty() && c <= out->back())
      return bad(here, formatString("[%d, %d] after [%d, %d]: channels must be "
                                    "distinct and sorted ascending",
                                    c.first, c.second, out->back().first,
                                    out->back().second));
    out->push_back(c);
  }
  return Status::ok();
}

Status checkSchedule(const manifest::Schedule &doc, ScheduleSpec *s) {
  s->name = doc.name;
  s->microbatches = doc.microbatches;
  s->devices = doc.devices;
  s->dataParallel = doc.dataParallel;
  s->worldSize = doc.worldSize;
  // World ranks are ints (MPI's): a larger world is no job this runtime
  // can be started as, and the product below must not overflow.
  if (s->worldSize > INT32_MAX)
    return bad(at(key::Schedule, key::WorldSize),
               formatString("%lld is more ranks than an MPI job has (at most "
                            "%d)",
                            static_cast<long long>(s->worldSize), INT32_MAX));
  if (s->devices > s->worldSize || s->dataParallel > s->worldSize ||
      s->worldSize != s->devices * s->dataParallel)
    return bad(key::Schedule,
               formatString("world_size %lld is not devices %lld x "
                            "data_parallel %lld",
                            static_cast<long long>(s->worldSize),
                            static_cast<long long>(s->devices),
                            static_cast<long long>(s->dataParallel)));
  s->transferStreams = static_cast<TransferStreams>(doc.transferStreams);
  s->gradientSync = doc.gradientSync;
  return checkChannels(doc.channels, s->devices, &s->channels);
}

Status checkParams(const std::vector<manifest::Param> &list,
                   std::vector<ParamSpec> *out) {
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    const manifest::Param &doc = list[i];
    std::string where = indexed(key::Params, i);
    ParamSpec p;
    p.name = doc.name;
    if (!names.insert(p.name).second)
      return bad(where, "parameter '" + p.name + "' is listed twice");
    p.shape = doc.shape;
    p.numel = numElements(p.shape);
    if (p.numel <= 0)
      return bad(at(where, key::Shape), "the size overflows");
    p.init = static_cast<InitKind>(doc.init);
    if (p.init == InitKind::Normal)
      p.stddev = doc.stddev;
    p.decay = doc.decay;
    out->push_back(std::move(p));
  }
  return Status::ok();
}

/// Which roles may appear where: an argument (isArg) or result of a
/// function of kind \p fk.
bool roleAllowed(FunctionKind fk, bool isArg, RoleKind r) {
  switch (fk) {
  case FunctionKind::Forward:
    return isArg ? (r == RoleKind::Param || r == RoleKind::Input ||
                    r == RoleKind::Activation)
                 : (r == RoleKind::Output || r == RoleKind::Saved);
  case FunctionKind::Backward:
    return isArg ? (r == RoleKind::Param || r == RoleKind::ForwardArg ||
                    r == RoleKind::Saved || r == RoleKind::GradOfResult)
                 : (r == RoleKind::Param || r == RoleKind::GradOfArg);
  case FunctionKind::BackwardInput:
    return isArg ? (r == RoleKind::Param || r == RoleKind::ForwardArg ||
                    r == RoleKind::Saved || r == RoleKind::GradOfResult)
                 : (r == RoleKind::Param || r == RoleKind::GradOfArg ||
                    r == RoleKind::Stash);
  case FunctionKind::BackwardWeight:
    return isArg ? (r == RoleKind::Param || r == RoleKind::ForwardArg ||
                    r == RoleKind::Saved || r == RoleKind::GradOfResult ||
                    r == RoleKind::Stash)
                 : r == RoleKind::Param;
  }
  return false;
}

Status checkRole(const manifest::Role &doc, const std::string &where,
                 const Manifest &m, FunctionKind fk, bool isArg, Role *role) {
  role->kind = static_cast<RoleKind>(doc.kind);
  const char *kind = roleKindName(role->kind);
  if (!roleAllowed(fk, isArg, role->kind))
    return bad(where, formatString("a %s of a %s function cannot have role "
                                   "'%s'",
                                   isArg ? "argument" : "result",
                                   functionKindName(fk), kind));
  role->shape = doc.shape;
  role->numel = numElements(role->shape);
  if (role->numel <= 0)
    return bad(at(where, key::Shape), "the size overflows");
  role->dtype = doc.dtype == BP_DTYPE_F32    ? DType::F32
                : doc.dtype == BP_DTYPE_BF16 ? DType::BF16
                : doc.dtype == BP_DTYPE_F64  ? DType::F64
                                             : DType::I32;
  const std::string dtype = bp_dtype_names[doc.dtype];
  const DType compute = m.target.computeDType();
  if (role->dtype == DType::BF16 && compute != DType::BF16)
    return bad(at(where, key::Dtype),
               std::string("bf16 under the target's precision ") +
                   precisionName(m.target.precision) +
                   " (only a bf16 program has bf16 values)");

  if (role->dtype == DType::F64 && (isArg || role->kind != RoleKind::Param))
    return bad(at(where, key::Dtype),
               "f64 for a '" + std::string(kind) +
                   "' (only a backward's parameter gradient, whose slot "
                   "holds the CPU's float64 accumulator, is f64)");

  switch (role->kind) {
  case RoleKind::Param: {
    // The parameter's name is under the role's own word.
    const char *nameKey = bp_role_kind_names[BP_ROLE_PARAM];
    const std::string &name = doc.param;
    role->param = m.findParam(name);
    if (role->param < 0)
      return bad(at(where, nameKey),
                 "'" + name + "' is not in \"" + key::Params + "\"");
    const ParamSpec &p = m.params[role->param];
    // Stage functions read the weights in the compute precision (the
    // backend's compute copy under bf16) and add their gradients into the
    // target's accumulators in place.
    DType want = isArg ? compute : m.target.gradientDType();
    if (role->shape != p.shape || role->dtype != want)
      return bad(where, "parameter '" + name + "' is " +
                            shapeToString(p.shape) + " " + dtypeName(want) +
                            (isArg ? ""
                                   : " (its gradient's accumulator on "
                                     "this target)") +
                            ", not " + shapeToString(role->shape) + " " +
                            dtype);
    break;
  }
  case RoleKind::Input: {
    role->input = static_cast<InputKind>(doc.input);
    if (role->input == InputKind::DropoutKey) {
      if (role->dtype != DType::I32 || role->numel != kDropoutKeyWords)
        return bad(where, formatString("a dropout key is %d int32, not %s %s",
                                       kDropoutKeyWords,
                                       shapeToString(role->shape).c_str(),
                                       dtype.c_str()));
      break;
    }
    int64_t want = m.model.microbatchSize * m.model.seqLen;
    if (role->dtype != DType::I32 || role->numel != want)
      return bad(where, formatString("an input is microbatch_size x seq_len "
                                     "= %lld int32, not %s %s",
                                     static_cast<long long>(want),
                                     shapeToString(role->shape).c_str(),
                                     dtype.c_str()));
    break;
  }
  case RoleKind::Saved:
  case RoleKind::ForwardArg:
  case RoleKind::GradOfResult:
  case RoleKind::GradOfArg:
  case RoleKind::Stash:
    role->index = static_cast<int>(doc.index);
    break;
  case RoleKind::Activation:
  case RoleKind::Output:
    break;
  }
  if ((role->kind == RoleKind::Activation || role->kind == RoleKind::Output ||
       role->kind == RoleKind::GradOfResult ||
       role->kind == RoleKind::GradOfArg) &&
      role->dtype != DType::F32 && role->dtype != compute)
    return bad(where, std::string("a '") + kind + "' is f32" +
                          (compute == DType::F32
                               ? ""
                               : std::string(" or ") + dtypeName(compute)) +
                          ", not " + dtype);
  return Status::ok();
}

Status checkFunctions(const std::vector<manifest::Function> &list,
                      Manifest *m) {
  for (size_t i = 0; i < list.size(); ++i) {
    const manifest::Function &doc = list[i];
    std::string where = indexed(key::Functions, i);
    StageFunction fn;
    fn.name = doc.name;
    fn.kind = static_cast<FunctionKind>(doc.kind);
    fn.stage = static_cast<int>(doc.stage);
    for (bool isArg : {true, false}) {
      const char *rolesKey = isArg ? key::Args : key::Results;
      const std::vector<manifest::Role> &roles = isArg ? doc.args : doc.results;
      std::vector<Role> &out = isArg ? fn.args : fn.results;
      for (size_t k = 0; k < roles.size(); ++k) {
        Role r;
        BP_TRY(checkRole(roles[k], indexed(at(where, rolesKey), k), *m, fn.kind,
                         isArg, &r));
        out.push_back(std::move(r));
      }
    }
    // The bp_rt_* calls bind at most this many values (program.h).
    auto count = [](const std::vector<Role> &roles,
                    std::initializer_list<RoleKind> kinds) {
      return std::count_if(roles.begin(), roles.end(), [&](const Role &r) {
        return std::find(kinds.begin(), kinds.end(), r.kind) != kinds.end();
      });
    };
    // A dropout key is not bound: the runtime passes it.
    int64_t keys =
        std::count_if(fn.args.begin(), fn.args.end(), [](const Role &r) {
          return r.kind == RoleKind::Input && r.input == InputKind::DropoutKey;
        });
    if (count(fn.args, {RoleKind::Input, RoleKind::Activation}) - keys > 2)
      return bad(where, "bp_rt_forward binds at most two inputs or "
                        "activations (in0, in1)");
    if (count(fn.results, {RoleKind::Output}) > 1)
      return bad(where, "bp_rt_forward binds at most one output (out0)");
    if (count(fn.args, {RoleKind::GradOfResult}) > 1)
      return bad(where, "bp_rt_backward binds at most one output gradient "
                        "(grad0)");
    if (count(fn.results, {RoleKind::GradOfArg}) > 1)
      return bad(where, "bp_rt_backward binds at most one input gradient "
                        "(out0)");
    m->functions.push_back(std::move(fn));
  }
  return Status::ok();
}

/// A group is pipeline ranks (Manifest.h): in increasing order, so that
/// its world group (Manifest::worldGroup) is too, and of a world group of
/// at least two ranks (an all-reduce over one rank is a compiler bug).
Status checkGroups(const std::vector<std::vector<int64_t>> &list, Manifest *m) {
  const int64_t devices = m->schedule.devices;
  const int64_t copies = m->schedule.dataParallel;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string where = indexed(key::Groups, i);
    const std::vector<int64_t> &ranks = list[i];
    if (ranks.empty())
      return bad(where, "a group needs at least one pipeline rank");
    if (ranks.size() == 1 && copies == 1)
      return bad(where, formatString("pipeline rank %lld alone, with "
                                     "data_parallel 1, is a group of one "
                                     "world rank; a group needs at least 2",
                                     static_cast<long long>(ranks[0])));
    std::vector<int> g;
    for (size_t k = 0; k < ranks.size(); ++k) {
      int64_t r = ranks[k];
      if (r >= devices)
        return bad(where, formatString("rank %lld is not a pipeline rank "
                                       "(below devices %lld)",
                                       static_cast<long long>(r),
                                       static_cast<long long>(devices)));
      // In increasing order, a repeated rank follows itself.
      if (k > 0 && r == ranks[k - 1])
        return bad(where, formatString("rank %lld is listed twice",
                                       static_cast<long long>(r)));
      if (k > 0 && r < ranks[k - 1])
        return bad(where, formatString("rank %lld after rank %lld: pipeline "
                                       "ranks must be in increasing order",
                                       static_cast<long long>(r),
                                       static_cast<long long>(ranks[k - 1])));
      g.push_back(static_cast<int>(r));
    }
    m->groups.push_back(std::move(g));
  }
  return Status::ok();
}

/// Each of \p names, a parameter of the manifest, once.
Status checkNames(const std::vector<std::string> &names,
                  const std::string &where, const Manifest &m,
                  std::vector<int> *out) {
  for (size_t i = 0; i < names.size(); ++i) {
    int p = m.findParam(names[i]);
    if (p < 0)
      return bad(indexed(where, i),
                 "'" + names[i] + "' is not in \"" + key::Params + "\"");
    if (std::find(out->begin(), out->end(), p) != out->end())
      return bad(indexed(where, i), "'" + names[i] + "' is listed twice");
    out->push_back(p);
  }
  return Status::ok();
}

Status checkRanks(const std::vector<manifest::Rank> &list, Manifest *m) {
  // One entry per pipeline rank: every data-parallel copy runs the same.
  if (static_cast<int64_t>(list.size()) != m->schedule.devices)
    return bad(key::Ranks,
               formatString("lists %zu ranks, but there is one per pipeline "
                            "rank: schedule.devices is %lld",
                            list.size(),
                            static_cast<long long>(m->schedule.devices)));
  for (size_t r = 0; r < list.size(); ++r) {
    const manifest::Rank &doc = list[r];
    std::string where = indexed(key::Ranks, r);
    RankSpec rs;
    if (doc.numValues > INT32_MAX)
      return bad(at(where, key::NumValues), "too large");
    rs.numValues = static_cast<int32_t>(doc.numValues);
    rs.peakHandles = doc.peakHandles.value_or(-1);
    rs.peakSavedBytes = doc.peakSavedBytes.value_or(-1);
    rs.predictedBubble = doc.predictedBubble.value_or(-1);
    BP_TRY(checkNames(doc.params, at(where, key::Params), *m, &rs.params));
    std::set<int> bucketed;
    for (size_t b = 0; b < doc.buckets.size(); ++b) {
      const manifest::Bucket &bucket = doc.buckets[b];
      std::string bw = indexed(at(where, key::Buckets), b);
      BucketSpec bs;
      int64_t g = bucket.group;
      if (g >= static_cast<int64_t>(m->groups.size()))
        return bad(at(bw, key::Group),
                   formatString("there are only %zu groups", m->groups.size()));
      bs.group = static_cast<int>(g);
      const std::vector<int> &members = m->groups[bs.group];
      if (std::find(members.begin(), members.end(), static_cast<int>(r)) ==
          members.end())
        return bad(at(bw, key::Group),
                   formatString("pipeline rank %zu is not a member of "
                                "group %lld",
                                r, static_cast<long long>(g)));
      BP_TRY(checkNames(bucket.params, at(bw, key::Params), *m, &bs.params));
      if (bs.params.empty())
        return bad(at(bw, key::Params),
                   "a bucket needs at least one parameter");
      for (int p : bs.params) {
        if (!rs.holds(p))
          return bad(at(bw, key::Params), "pipeline rank " + std::to_string(r) +
                                              " does not hold '" +
                                              m->params[p].name + "'");
        if (!bucketed.insert(p).second)
          return bad(at(bw, key::Params),
                     "'" + m->params[p].name + "' is in two buckets");
      }
      rs.buckets.push_back(std::move(bs));
    }
    m->ranks.push_back(std::move(rs));
  }
  return Status::ok();
}

/// The buckets of \p rank on group \p g, in order.
std::vector<const BucketSpec *> bucketsOn(const RankSpec &rank, int g) {
  std::vector<const BucketSpec *> out;
  for (const BucketSpec &b : rank.buckets)
    if (b.group == g)
      out.push_back(&b);
  return out;
}

Status checkGroupsAgree(const Manifest &m) {
  for (size_t g = 0; g < m.groups.size(); ++g) {
    const std::vector<int> &members = m.groups[g];
    std::vector<const BucketSpec *> first =
        bucketsOn(m.ranks[members[0]], static_cast<int>(g));
    for (size_t k = 1; k < members.size(); ++k) {
      std::vector<const BucketSpec *> other =
          bucketsOn(m.ranks[members[k]], static_cast<int>(g));
      bool same = first.size() == other.size();
      for (size_t b = 0; same && b < first.size(); ++b)
        same = first[b]->params == other[b]->params;
      if (!same)
        return bad(key::Ranks,
                   formatString("pipeline ranks %d and %d list different "
                                "buckets for group %zu; every member must "
                                "all-reduce the same parameters in the same "
                                "order",
                                members[0], members[k], g));
    }
  }
  return Status::ok();
}

} // namespace

Expected<Manifest> parseManifest(std::string_view text) {
  Expected<manifest::Manifest> doc = manifest::readManifest(text);
  if (!doc.isOk())
    return doc.status();
  Manifest m;
  // The target first: the roles' dtypes depend on its precision.
  BP_TRY(checkTarget(doc->target, &m.target));
  BP_TRY(checkModel(doc->model, &m.model));
  BP_TRY(checkSchedule(doc->schedule, &m.schedule));
  BP_TRY(checkParams(doc->params, &m.params));
  BP_TRY(checkFunctions(doc->functions, &m));
  BP_TRY(checkGroups(doc->groups, &m));
  BP_TRY(checkRanks(doc->ranks, &m));
  BP_TRY(checkGroupsAgree(m));
  return m;
}

} // namespace bitpipe::runtime
