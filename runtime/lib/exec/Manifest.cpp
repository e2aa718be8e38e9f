//===- Manifest.cpp - The compiled program's manifest, parsed ---*- C++ -*-===//

#include "Manifest.h"

#include "core/Dropout.h"
#include "core/Json.h"
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

/// The manifest's keys, as bitpipe/abi/ManifestKeys.def spells them.
namespace key {
#define BP_MANIFEST_KEY(id, text) constexpr const char id[] = text;
#include "bitpipe/abi/ManifestKeys.def"
} // namespace key

Status bad(const std::string &where, const std::string &what) {
  return Status::error(ErrorCode::FormatError,
                       "manifest: " + where + ": " + what);
}

/// Typed access to the members of a JSON object, each failure naming the
/// member's path in the manifest.
class Fields {
public:
  Fields(const JsonValue &v, std::string where)
      : v_(v), where_(std::move(where)) {}

  Status object() const {
    return v_.kind == JsonValue::Kind::Object
               ? Status::ok()
               : bad(where_, "expected a JSON object");
  }
  bool has(const char *key) const { return v_.get(key) != nullptr; }
  std::string at(const char *key) const { return where_ + "." + key; }

  Status integer(const char *key, int64_t *out, int64_t min) const {
    const JsonValue *m = v_.get(key);
    if (!m)
      return bad(where_, std::string("missing \"") + key + "\"");
    if (m->kind != JsonValue::Kind::Number || !m->isInteger)
      return bad(at(key), "expected an integer");
    if (m->integer < min)
      return bad(at(key), formatString("%lld is below %lld",
                                       static_cast<long long>(m->integer),
                                       static_cast<long long>(min)));
    *out = m->integer;
    return Status::ok();
  }
  Status number(const char *key, double *out) const {
    const JsonValue *m = v_.get(key);
    if (!m)
      return bad(where_, std::string("missing \"") + key + "\"");
    if (m->kind != JsonValue::Kind::Number)
      return bad(at(key), "expected a number");
    *out = m->number;
    return Status::ok();
  }
  Status string(const char *key, std::string *out) const {
    const JsonValue *m = v_.get(key);
    if (!m)
      return bad(where_, std::string("missing \"") + key + "\"");
    if (m->kind != JsonValue::Kind::String)
      return bad(at(key), "expected a string");
    *out = m->string;
    return Status::ok();
  }
  Status boolean(const char *key, bool *out) const {
    const JsonValue *m = v_.get(key);
    if (!m)
      return bad(where_, std::string("missing \"") + key + "\"");
    if (m->kind != JsonValue::Kind::Bool)
      return bad(at(key), "expected true or false");
    *out = m->boolean;
    return Status::ok();
  }
  Status array(const char *key, const std::vector<JsonValue> **out) const {
    const JsonValue *m = v_.get(key);
    if (!m)
      return bad(where_, std::string("missing \"") + key + "\"");
    if (m->kind != JsonValue::Kind::Array)
      return bad(at(key), "expected a list");
    *out = &m->array;
    return Status::ok();
  }
  /// A string member that must be one of the \p N words of \p names (a
  /// name table of program.h, from bitpipe/abi/ManifestKeys.def); *out is
  /// its index. \p what names the vocabulary in the error.
  template <size_t N>
  Status word(const char *key, const char *const (&names)[N], const char *what,
              int *out) const {
    std::string text;
    BP_TRY(string(key, &text));
    for (size_t i = 0; i < N; ++i)
      if (text == names[i]) {
        *out = static_cast<int>(i);
        return Status::ok();
      }
    std::string expected;
    for (size_t i = 0; i < N; ++i)
      expected += (i ? ", " : "") + std::string(names[i]);
    return bad(at(key), std::string("unknown ") + what + " '" + text +
                            "' (expected one of " + expected + ")");
  }
  Status member(const char *key, const JsonValue **out) const {
    const JsonValue *m = v_.get(key);
    if (!m)
      return bad(where_, std::string("missing \"") + key + "\"");
    *out = m;
    return Status::ok();
  }

private:
  const JsonValue &v_;
  std::string where_;
};


std::string indexed(const std::string &where, size_t i) {
  return where + "[" + std::to_string(i) + "]";
}

Status parseIntList(const JsonValue &v, const std::string &where,
                    int64_t min, std::vector<int64_t> *out) {
  if (v.kind != JsonValue::Kind::Array)
    return bad(where, "expected a list of integers");
  out->clear();
  for (size_t i = 0; i < v.array.size(); ++i) {
    const JsonValue &e = v.array[i];
    if (e.kind != JsonValue::Kind::Number || !e.isInteger || e.integer < min)
      return bad(indexed(where, i),
                 formatString("expected an integer >= %lld",
                              static_cast<long long>(min)));
    out->push_back(e.integer);
  }
  return Status::ok();
}

Status parseTarget(const JsonValue &v, TargetSpec *t) {
  Fields f(v, key::Target);
  BP_TRY(f.object());
  int kind = 0, precision = 0;
  BP_TRY(f.word(key::Name, bp_target_kind_names, "target", &kind));
  BP_TRY(f.word(key::Precision, bp_precision_names, "precision",
                &precision));
  t->kind = static_cast<TargetKind>(kind);
  t->precision = static_cast<Precision>(precision);
  // bf16 kernels exist on the device only (runtime.h's CPU kernels are
  // fp32): a CPU program in bf16 would be misread by every kernel.
  if (t->precision == Precision::Bf16 && t->kind != TargetKind::Cuda)
    return bad(f.at(key::Precision),
               std::string("bf16 needs the cuda target, not ") +
                   targetKindName(t->kind));
  return Status::ok();
}

Status parseModel(const JsonValue &v, ModelSpec *m) {
  Fields f(v, key::Model);
  BP_TRY(f.object());
  BP_TRY(f.string(key::Name, &m->name));
  int family = 0;
  BP_TRY(f.word(key::Family, bp_model_family_names, "model family", &family));
  m->family = static_cast<ModelFamily>(family);
  BP_TRY(f.integer(key::Vocab, &m->vocab, 1));
  BP_TRY(f.integer(key::SeqLen, &m->seqLen, 1));
  BP_TRY(f.integer(key::MicrobatchSize, &m->microbatchSize, 1));
  if (f.has(key::MaskToken)) {
    int64_t t = 0;
    BP_TRY(f.integer(key::MaskToken, &t, 0));
    if (t >= m->vocab)
      return bad(f.at(key::MaskToken),
                 formatString("%lld is not below the vocabulary size %lld",
                              static_cast<long long>(t),
                              static_cast<long long>(m->vocab)));
    m->maskToken = static_cast<int32_t>(t);
  } else if (m->family == ModelFamily::Bert) {
    return bad(key::Model, std::string("a bert model needs \"") +
                               key::MaskToken + "\" (the [MASK] id)");
  }
  if (f.has(key::Heads))
    BP_TRY(f.integer(key::Heads, &m->heads, 1));
  if (f.has(key::MaxPositions))
    BP_TRY(f.integer(key::MaxPositions, &m->maxPositions, 1));
  if (f.has(key::NormEpsilon))
    BP_TRY(f.number(key::NormEpsilon, &m->normEpsilon));
  if (f.has(key::RopeTheta))
    BP_TRY(f.number(key::RopeTheta, &m->ropeTheta));
  if (f.has(key::Gelu)) {
    int form = 0;
    BP_TRY(f.word(key::Gelu, bp_gelu_form_names, "GELU form", &form));
    m->gelu = static_cast<GeluForm>(form);
  }
  if (f.has(key::NormPosition)) {
    int position = 0;
    BP_TRY(f.word(key::NormPosition, bp_norm_position_names, "norm position",
                  &position));
    m->normPosition = static_cast<NormPosition>(position);
  }
  return Status::ok();
}

/// schedule.channels: [sender, receiver] pairs of pipeline ranks, two
/// distinct ones, the list sorted and without repeats (program.h).
Status parseChannels(const std::vector<JsonValue> &list,
                     const std::string &where, int64_t devices,
                     std::vector<Channel> *out) {
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = indexed(where, i);
    const JsonValue &pair = list[i];
    bool shaped = pair.kind == JsonValue::Kind::Array &&
                  pair.array.size() == 2;
    for (size_t k = 0; shaped && k < 2; ++k)
      shaped = pair.array[k].kind == JsonValue::Kind::Number &&
               pair.array[k].isInteger;
    if (!shaped)
      return bad(at, "expected a [sender, receiver] pair of pipeline ranks");
    const int64_t from = pair.array[0].integer, to = pair.array[1].integer;
    for (int64_t r : {from, to})
      if (r < 0 || r >= devices)
        return bad(at, formatString("rank %lld is not a pipeline rank (in "
                                    "[0, devices %lld))",
                                    static_cast<long long>(r),
                                    static_cast<long long>(devices)));
    if (from == to)
      return bad(at, formatString("a channel from pipeline rank %lld to "
                                  "itself; expected two distinct ranks",
                                  static_cast<long long>(from)));
    const Channel c{static_cast<int>(from), static_cast<int>(to)};
    if (!out->empty() && c <= out->back())
      return bad(at, formatString("[%d, %d] after [%d, %d]: channels must be "
                                  "distinct and sorted ascending",
                                  c.first, c.second, out->back().first,
                                  out->back().second));
    out->push_back(c);
  }
  return Status::ok();
}

Status parseSchedule(const JsonValue &v, ScheduleSpec *s) {
  Fields f(v, key::Schedule);
  BP_TRY(f.object());
  BP_TRY(f.string(key::Name, &s->name));
  BP_TRY(f.integer(key::Microbatches, &s->microbatches, 1));
  BP_TRY(f.integer(key::Devices, &s->devices, 1));
  BP_TRY(f.integer(key::DataParallel, &s->dataParallel, 1));
  BP_TRY(f.integer(key::WorldSize, &s->worldSize, 1));
  // World ranks are ints (MPI's): a larger world is no job this runtime
  // can be started as, and the product below must not overflow.
  if (s->worldSize > INT32_MAX)
    return bad(std::string(key::Schedule) + "." + key::WorldSize,
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
  int streams = 0;
  BP_TRY(f.word(key::TransferStreams, bp_transfer_streams_names,
                "transfer streams", &streams));
  s->transferStreams = static_cast<TransferStreams>(streams);
  const std::vector<JsonValue> *channels = nullptr;
  BP_TRY(f.array(key::Channels, &channels));
  return parseChannels(*channels, f.at(key::Channels), s->devices,
                       &s->channels);
}

Status parseParams(const std::vector<JsonValue> &list,
                   std::vector<ParamSpec> *out) {
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string where = indexed(key::Params, i);
    Fields f(list[i], where);
    BP_TRY(f.object());
    ParamSpec p;
    BP_TRY(f.string(key::Name, &p.name));
    if (!names.insert(p.name).second)
      return bad(where, "parameter '" + p.name + "' is listed twice");
    const JsonValue *shape = nullptr;
    BP_TRY(f.member(key::Shape, &shape));
    BP_TRY(parseIntList(*shape, f.at(key::Shape), 1, &p.shape));
    p.numel = numElements(p.shape);
    if (p.numel <= 0)
      return bad(f.at(key::Shape), "the size overflows");
    const JsonValue *init = nullptr;
    BP_TRY(f.member(key::Init, &init));
    Fields fi(*init, f.at(key::Init));
    BP_TRY(fi.object());
    int kind = 0;
    BP_TRY(fi.word(key::Kind, bp_init_kind_names, "initialiser", &kind));
    p.init = static_cast<InitKind>(kind);
    if (p.init == InitKind::Normal) {
      BP_TRY(fi.number(key::Std, &p.stddev));
      if (!(p.stddev >= 0))
        return bad(fi.at(key::Std), "must be non-negative");
    }
    BP_TRY(f.boolean(key::Decay, &p.decay));
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

Status parseRole(const JsonValue &v, const std::string &where,
                 const Manifest &m, FunctionKind fk, bool isArg, Role *role) {
  Fields f(v, where);
  BP_TRY(f.object());
  int roleKind = 0;
  BP_TRY(f.word(key::Role, bp_role_kind_names, "role", &roleKind));
  role->kind = static_cast<RoleKind>(roleKind);
  const char *kind = roleKindName(role->kind);
  if (!roleAllowed(fk, isArg, role->kind))
    return bad(where, formatString("a %s of a %s function cannot have role "
                                   "'%s'",
                                   isArg ? "argument" : "result",
                                   functionKindName(fk), kind));
  const JsonValue *shape = nullptr;
  BP_TRY(f.member(key::Shape, &shape));
  BP_TRY(parseIntList(*shape, f.at(key::Shape), 1, &role->shape));
  role->numel = numElements(role->shape);
  if (role->numel <= 0)
    return bad(f.at(key::Shape), "the size overflows");
  int dtypeIndex = 0;
  BP_TRY(f.word(key::Dtype, bp_dtype_names, "dtype", &dtypeIndex));
  role->dtype = dtypeIndex == BP_DTYPE_F32    ? DType::F32
                : dtypeIndex == BP_DTYPE_BF16 ? DType::BF16
                                              : DType::I32;
  const std::string dtype = bp_dtype_names[dtypeIndex];
  const DType compute = m.target.computeDType();
  if (role->dtype == DType::BF16 && compute != DType::BF16)
    return bad(f.at(key::Dtype),
               std::string("bf16 under the target's precision ") +
                   precisionName(m.target.precision) +
                   " (only a bf16 program has bf16 values)");

  switch (role->kind) {
  case RoleKind::Param: {
    // The parameter's name is under the role's own word.
    const char *nameKey = bp_role_kind_names[BP_ROLE_PARAM];
    std::string name;
    BP_TRY(f.string(nameKey, &name));
    role->param = m.findParam(name);
    if (role->param < 0)
      return bad(f.at(nameKey),
                 "'" + name + "' is not in \"" + key::Params + "\"");
    const ParamSpec &p = m.params[role->param];
    // Stage functions read the weights in the compute precision (the
    // backend's compute copy under bf16) and return their gradients in
    // f32, which the backend adds into the f32 accumulators.
    DType want = isArg ? compute : DType::F32;
    if (role->shape != p.shape || role->dtype != want)
      return bad(where, "parameter '" + name + "' is " +
                            shapeToString(p.shape) + " " + dtypeName(want) +
                            (isArg ? "" : " (its gradient)") + ", not " +
                            shapeToString(role->shape) + " " + dtype);
    break;
  }
  case RoleKind::Input: {
    int input = 0;
    BP_TRY(f.word(bp_role_kind_names[BP_ROLE_INPUT], bp_input_kind_names,
                  "input", &input));
    role->input = static_cast<InputKind>(input);
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
  case RoleKind::Stash: {
    int64_t index = 0;
    BP_TRY(f.integer(key::Index, &index, 0));
    role->index = static_cast<int>(index);
    break;
  }
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

Status parseFunctions(const std::vector<JsonValue> &list, Manifest *m) {
  for (size_t i = 0; i < list.size(); ++i) {
    std::string where = indexed(key::Functions, i);
    Fields f(list[i], where);
    BP_TRY(f.object());
    StageFunction fn;
    BP_TRY(f.string(key::Name, &fn.name));
    int kind = 0;
    BP_TRY(f.word(key::Kind, bp_function_kind_names, "function kind", &kind));
    fn.kind = static_cast<FunctionKind>(kind);
    int64_t stage = 0;
    BP_TRY(f.integer(key::Stage, &stage, 0));
    fn.stage = static_cast<int>(stage);
    for (bool isArg : {true, false}) {
      const char *rolesKey = isArg ? key::Args : key::Results;
      const std::vector<JsonValue> *roles = nullptr;
      BP_TRY(f.array(rolesKey, &roles));
      std::vector<Role> &out = isArg ? fn.args : fn.results;
      for (size_t k = 0; k < roles->size(); ++k) {
        Role r;
        BP_TRY(parseRole((*roles)[k], indexed(where + "." + rolesKey, k), *m,
                         fn.kind, isArg, &r));
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
    int64_t keys = std::count_if(fn.args.begin(), fn.args.end(),
                                 [](const Role &r) {
                                   return r.kind == RoleKind::Input &&
                                          r.input == InputKind::DropoutKey;
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
Status parseGroups(const std::vector<JsonValue> &list, Manifest *m) {
  const int64_t devices = m->schedule.devices;
  const int64_t copies = m->schedule.dataParallel;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string where = indexed(key::Groups, i);
    std::vector<int64_t> ranks;
    BP_TRY(parseIntList(list[i], where, 0, &ranks));
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

Status parseNames(const JsonValue &v, const std::string &where,
                  const Manifest &m, std::vector<int> *out) {
  if (v.kind != JsonValue::Kind::Array)
    return bad(where, "expected a list of parameter names");
  for (size_t i = 0; i < v.array.size(); ++i) {
    const JsonValue &e = v.array[i];
    if (e.kind != JsonValue::Kind::String)
      return bad(indexed(where, i), "expected a parameter name");
    int p = m.findParam(e.string);
    if (p < 0)
      return bad(indexed(where, i),
                 "'" + e.string + "' is not in \"" + key::Params + "\"");
    if (std::find(out->begin(), out->end(), p) != out->end())
      return bad(indexed(where, i), "'" + e.string + "' is listed twice");
    out->push_back(p);
  }
  return Status::ok();
}

Status parseRanks(const std::vector<JsonValue> &list, Manifest *m) {
  // One entry per pipeline rank: every data-parallel copy runs the same.
  if (static_cast<int64_t>(list.size()) != m->schedule.devices)
    return bad(key::Ranks,
               formatString("lists %zu ranks, but there is one per pipeline "
                            "rank: schedule.devices is %lld",
                            list.size(),
                            static_cast<long long>(m->schedule.devices)));
  for (size_t r = 0; r < list.size(); ++r) {
    std::string where = indexed(key::Ranks, r);
    Fields f(list[r], where);
    BP_TRY(f.object());
    RankSpec rs;
    int64_t n = 0;
    BP_TRY(f.integer(key::NumValues, &n, 0));
    if (n > INT32_MAX)
      return bad(f.at(key::NumValues), "too large");
    rs.numValues = static_cast<int32_t>(n);
    if (list[r].get(key::PeakHandles))
      BP_TRY(f.integer(key::PeakHandles, &rs.peakHandles, 0));
    if (list[r].get(key::PeakSavedBytes))
      BP_TRY(f.integer(key::PeakSavedBytes, &rs.peakSavedBytes, 0));
    const JsonValue *params = nullptr;
    BP_TRY(f.member(key::Params, &params));
    BP_TRY(parseNames(*params, f.at(key::Params), *m, &rs.params));
    const std::vector<JsonValue> *buckets = nullptr;
    BP_TRY(f.array(key::Buckets, &buckets));
    std::set<int> bucketed;
    for (size_t b = 0; b < buckets->size(); ++b) {
      std::string bw = indexed(where + ".buckets", b);
      Fields fb((*buckets)[b], bw);
      BP_TRY(fb.object());
      BucketSpec bs;
      int64_t g = 0;
      BP_TRY(fb.integer(key::Group, &g, 0));
      if (g >= static_cast<int64_t>(m->groups.size()))
        return bad(fb.at(key::Group),
                   formatString("there are only %zu groups", m->groups.size()));
      bs.group = static_cast<int>(g);
      const std::vector<int> &members = m->groups[bs.group];
      if (std::find(members.begin(), members.end(), static_cast<int>(r)) ==
          members.end())
        return bad(fb.at(key::Group),
                   formatString("pipeline rank %zu is not a member of "
                                "group %lld",
                                r, static_cast<long long>(g)));
      const JsonValue *names = nullptr;
      BP_TRY(fb.member(key::Params, &names));
      BP_TRY(parseNames(*names, fb.at(key::Params), *m, &bs.params));
      if (bs.params.empty())
        return bad(fb.at(key::Params), "a bucket needs at least one parameter");
      for (int p : bs.params) {
        if (!rs.holds(p))
          return bad(fb.at(key::Params), "pipeline rank " + std::to_string(r) +
                                             " does not hold '" +
                                             m->params[p].name + "'");
        if (!bucketed.insert(p).second)
          return bad(fb.at(key::Params),
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
  Expected<JsonValue> json = parseJson(text);
  if (!json.isOk())
    return Status::error(ErrorCode::FormatError,
                         "manifest: " + json.status().message());
  Manifest m;
  Fields top(*json, "manifest");
  BP_TRY(top.object());
  int64_t version = 0;
  BP_TRY(top.integer(key::Version, &version, 0));
  // First, before anything whose meaning may have changed between versions.
  if (version != BP_MANIFEST_VERSION)
    return bad(key::Version,
               formatString("the program's manifest is version %lld, but "
                            "this runtime reads version %d only; link the "
                            "model with the runtime of the bitpipe-compile "
                            "that compiled it",
                            static_cast<long long>(version),
                            BP_MANIFEST_VERSION));
  const JsonValue *v = nullptr;
  // The target first: the roles' dtypes depend on its precision.
  BP_TRY(top.member(key::Target, &v));
  BP_TRY(parseTarget(*v, &m.target));
  BP_TRY(top.member(key::Model, &v));
  BP_TRY(parseModel(*v, &m.model));
  BP_TRY(top.member(key::Schedule, &v));
  BP_TRY(parseSchedule(*v, &m.schedule));
  const std::vector<JsonValue> *list = nullptr;
  BP_TRY(top.array(key::Params, &list));
  BP_TRY(parseParams(*list, &m.params));
  BP_TRY(top.array(key::Functions, &list));
  BP_TRY(parseFunctions(*list, &m));
  BP_TRY(top.array(key::Groups, &list));
  BP_TRY(parseGroups(*list, &m));
  BP_TRY(top.array(key::Ranks, &list));
  BP_TRY(parseRanks(*list, &m));
  BP_TRY(checkGroupsAgree(m));
  return m;
}

} // namespace bitpipe::runtime
