//===- Manifest.cpp - The compiled program's manifest, parsed ---*- C++ -*-===//

#include "Manifest.h"

#include "core/Json.h"
#include "core/Tensor.h"

#include <algorithm>
#include <map>
#include <set>

namespace bitpipe::runtime {

const char *roleKindName(RoleKind kind) {
  return bp_role_kind_names[static_cast<int>(kind)];
}

const char *functionKindName(FunctionKind kind) {
  return bp_function_kind_names[static_cast<int>(kind)];
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
  for (size_t r = 0; r < ranks.size(); ++r)
    if (ranks[r].holds(param))
      return static_cast<int>(r);
  return -1;
}

namespace {

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

Status parseModel(const JsonValue &v, ModelSpec *m) {
  Fields f(v, "model");
  BP_TRY(f.object());
  BP_TRY(f.string("name", &m->name));
  std::string family;
  BP_TRY(f.string("family", &family));
  if (family == "gpt")
    m->family = ModelFamily::Gpt;
  else if (family == "bert")
    m->family = ModelFamily::Bert;
  else
    return bad(f.at("family"), "'" + family + "' is neither gpt nor bert");
  BP_TRY(f.integer("vocab", &m->vocab, 1));
  BP_TRY(f.integer("seq_len", &m->seqLen, 1));
  BP_TRY(f.integer("microbatch_size", &m->microbatchSize, 1));
  if (f.has("mask_token")) {
    int64_t t = 0;
    BP_TRY(f.integer("mask_token", &t, 0));
    if (t >= m->vocab)
      return bad(f.at("mask_token"),
                 formatString("%lld is not below the vocabulary size %lld",
                              static_cast<long long>(t),
                              static_cast<long long>(m->vocab)));
    m->maskToken = static_cast<int32_t>(t);
  } else if (m->family == ModelFamily::Bert) {
    return bad("model", "a bert model needs \"mask_token\" (the [MASK] id)");
  }
  return Status::ok();
}

Status parseSchedule(const JsonValue &v, ScheduleSpec *s) {
  Fields f(v, "schedule");
  BP_TRY(f.object());
  BP_TRY(f.string("name", &s->name));
  BP_TRY(f.integer("microbatches", &s->microbatches, 1));
  BP_TRY(f.integer("devices", &s->devices, 1));
  BP_TRY(f.integer("data_parallel", &s->dataParallel, 1));
  BP_TRY(f.integer("world_size", &s->worldSize, 1));
  if (s->worldSize != s->devices * s->dataParallel)
    return bad("schedule",
               formatString("world_size %lld is not devices %lld x "
                            "data_parallel %lld",
                            static_cast<long long>(s->worldSize),
                            static_cast<long long>(s->devices),
                            static_cast<long long>(s->dataParallel)));
  return Status::ok();
}

Status parseParams(const std::vector<JsonValue> &list,
                   std::vector<ParamSpec> *out) {
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string where = indexed("params", i);
    Fields f(list[i], where);
    BP_TRY(f.object());
    ParamSpec p;
    BP_TRY(f.string("name", &p.name));
    if (!names.insert(p.name).second)
      return bad(where, "parameter '" + p.name + "' is listed twice");
    const JsonValue *shape = nullptr;
    BP_TRY(f.member("shape", &shape));
    BP_TRY(parseIntList(*shape, f.at("shape"), 1, &p.shape));
    p.numel = numElements(p.shape);
    if (p.numel <= 0)
      return bad(f.at("shape"), "the size overflows");
    const JsonValue *init = nullptr;
    BP_TRY(f.member("init", &init));
    Fields fi(*init, f.at("init"));
    BP_TRY(fi.object());
    std::string kind;
    BP_TRY(fi.string("kind", &kind));
    if (kind == "normal") {
      p.init = InitKind::Normal;
      BP_TRY(fi.number("std", &p.stddev));
      if (!(p.stddev >= 0))
        return bad(fi.at("std"), "must be non-negative");
    } else if (kind == "zeros") {
      p.init = InitKind::Zeros;
    } else if (kind == "ones") {
      p.init = InitKind::Ones;
    } else {
      return bad(fi.at("kind"),
                 "'" + kind + "' is not one of normal, zeros, ones");
    }
    BP_TRY(f.boolean("decay", &p.decay));
    out->push_back(std::move(p));
  }
  return Status::ok();
}

Status parseRoleKind(const std::string &s, RoleKind *k) {
  for (int i = 0; i < BP_NUM_ROLE_KINDS; ++i)
    if (s == bp_role_kind_names[i]) {
      *k = static_cast<RoleKind>(i);
      return Status::ok();
    }
  return Status::error(ErrorCode::FormatError, "unknown role '" + s + "'");
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
  std::string kind;
  BP_TRY(f.string("role", &kind));
  Status ks = parseRoleKind(kind, &role->kind);
  if (!ks.isOk())
    return bad(f.at("role"), ks.message());
  if (!roleAllowed(fk, isArg, role->kind))
    return bad(where, formatString("a %s of a %s function cannot have role "
                                   "'%s'",
                                   isArg ? "argument" : "result",
                                   functionKindName(fk), kind.c_str()));
  const JsonValue *shape = nullptr;
  BP_TRY(f.member("shape", &shape));
  BP_TRY(parseIntList(*shape, f.at("shape"), 1, &role->shape));
  role->numel = numElements(role->shape);
  if (role->numel <= 0)
    return bad(f.at("shape"), "the size overflows");
  std::string dtype;
  BP_TRY(f.string("dtype", &dtype));
  if (dtype == "f32")
    role->dtype = DType::F32;
  else if (dtype == "i32")
    role->dtype = DType::I32;
  else
    return bad(f.at("dtype"), "'" + dtype + "' is neither f32 nor i32");

  switch (role->kind) {
  case RoleKind::Param: {
    std::string name;
    BP_TRY(f.string("param", &name));
    role->param = m.findParam(name);
    if (role->param < 0)
      return bad(f.at("param"), "'" + name + "' is not in \"params\"");
    const ParamSpec &p = m.params[role->param];
    if (role->shape != p.shape || role->dtype != DType::F32)
      return bad(where, "parameter '" + name + "' is " +
                            shapeToString(p.shape) + " f32, not " +
                            shapeToString(role->shape) + " " + dtype);
    break;
  }
  case RoleKind::Input: {
    std::string input;
    BP_TRY(f.string("input", &input));
    if (input == "tokens")
      role->input = InputKind::Tokens;
    else if (input == "labels")
      role->input = InputKind::Labels;
    else
      return bad(f.at("input"),
                 "'" + input + "' is neither tokens nor labels");
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
    BP_TRY(f.integer("index", &index, 0));
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
      role->dtype != DType::F32)
    return bad(where, std::string("a '") + kind +
                          "' travels between ranks as float32; its dtype "
                          "must be f32");
  return Status::ok();
}

Status parseFunctions(const std::vector<JsonValue> &list, Manifest *m) {
  for (size_t i = 0; i < list.size(); ++i) {
    std::string where = indexed("functions", i);
    Fields f(list[i], where);
    BP_TRY(f.object());
    StageFunction fn;
    BP_TRY(f.string("name", &fn.name));
    std::string kind;
    BP_TRY(f.string("kind", &kind));
    int k = 0;
    while (k < BP_NUM_FUNCTION_KINDS && kind != bp_function_kind_names[k])
      ++k;
    if (k == BP_NUM_FUNCTION_KINDS)
      return bad(f.at("kind"), "unknown function kind '" + kind + "'");
    fn.kind = static_cast<FunctionKind>(k);
    int64_t stage = 0;
    BP_TRY(f.integer("stage", &stage, 0));
    fn.stage = static_cast<int>(stage);
    for (bool isArg : {true, false}) {
      const char *key = isArg ? "args" : "results";
      const std::vector<JsonValue> *roles = nullptr;
      BP_TRY(f.array(key, &roles));
      std::vector<Role> &out = isArg ? fn.args : fn.results;
      for (size_t k = 0; k < roles->size(); ++k) {
        Role r;
        BP_TRY(parseRole((*roles)[k], indexed(where + "." + key, k), *m,
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
    if (count(fn.args, {RoleKind::Input, RoleKind::Activation}) > 2)
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

Status parseGroups(const std::vector<JsonValue> &list, Manifest *m) {
  for (size_t i = 0; i < list.size(); ++i) {
    std::string where = indexed("groups", i);
    std::vector<int64_t> ranks;
    BP_TRY(parseIntList(list[i], where, 0, &ranks));
    if (ranks.empty())
      return bad(where, "a group needs at least one rank");
    std::set<int64_t> seen;
    std::vector<int> g;
    for (int64_t r : ranks) {
      if (r >= m->schedule.worldSize)
        return bad(where, formatString("rank %lld is not below world_size "
                                       "%lld",
                                       static_cast<long long>(r),
                                       static_cast<long long>(
                                           m->schedule.worldSize)));
      if (!seen.insert(r).second)
        return bad(where, formatString("rank %lld is listed twice",
                                       static_cast<long long>(r)));
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
                 "'" + e.string + "' is not in \"params\"");
    if (std::find(out->begin(), out->end(), p) != out->end())
      return bad(indexed(where, i), "'" + e.string + "' is listed twice");
    out->push_back(p);
  }
  return Status::ok();
}

Status parseRanks(const std::vector<JsonValue> &list, Manifest *m) {
  if (static_cast<int64_t>(list.size()) != m->schedule.worldSize)
    return bad("ranks", formatString("lists %zu ranks, world_size is %lld",
                                     list.size(),
                                     static_cast<long long>(
                                         m->schedule.worldSize)));
  for (size_t r = 0; r < list.size(); ++r) {
    std::string where = indexed("ranks", r);
    Fields f(list[r], where);
    BP_TRY(f.object());
    RankSpec rs;
    int64_t n = 0;
    BP_TRY(f.integer("num_values", &n, 0));
    if (n > INT32_MAX)
      return bad(f.at("num_values"), "too large");
    rs.numValues = static_cast<int32_t>(n);
    int64_t copy = 0;
    BP_TRY(f.integer("dp_copy", &copy, 0));
    if (copy >= m->schedule.dataParallel)
      return bad(f.at("dp_copy"),
                 formatString("%lld is not below data_parallel %lld",
                              static_cast<long long>(copy),
                              static_cast<long long>(
                                  m->schedule.dataParallel)));
    rs.dpCopy = static_cast<int>(copy);
    if (list[r].get("peak_handles"))
      BP_TRY(f.integer("peak_handles", &rs.peakHandles, 0));
    if (list[r].get("peak_saved_bytes"))
      BP_TRY(f.integer("peak_saved_bytes", &rs.peakSavedBytes, 0));
    const JsonValue *params = nullptr;
    BP_TRY(f.member("params", &params));
    BP_TRY(parseNames(*params, f.at("params"), *m, &rs.params));
    const std::vector<JsonValue> *buckets = nullptr;
    BP_TRY(f.array("buckets", &buckets));
    std::set<int> bucketed;
    for (size_t b = 0; b < buckets->size(); ++b) {
      std::string bw = indexed(where + ".buckets", b);
      Fields fb((*buckets)[b], bw);
      BP_TRY(fb.object());
      BucketSpec bs;
      int64_t g = 0;
      BP_TRY(fb.integer("group", &g, 0));
      if (g >= static_cast<int64_t>(m->groups.size()))
        return bad(fb.at("group"),
                   formatString("there are only %zu groups",
                                m->groups.size()));
      bs.group = static_cast<int>(g);
      const std::vector<int> &members = m->groups[bs.group];
      if (std::find(members.begin(), members.end(), static_cast<int>(r)) ==
          members.end())
        return bad(fb.at("group"),
                   formatString("rank %zu is not a member of group %lld", r,
                                static_cast<long long>(g)));
      const JsonValue *names = nullptr;
      BP_TRY(fb.member("params", &names));
      BP_TRY(parseNames(*names, fb.at("params"), *m, &bs.params));
      if (bs.params.empty())
        return bad(fb.at("params"), "a bucket needs at least one parameter");
      for (int p : bs.params) {
        if (!rs.holds(p))
          return bad(fb.at("params"),
                     "rank " + std::to_string(r) + " does not hold '" +
                         m->params[p].name + "'");
        if (!bucketed.insert(p).second)
          return bad(fb.at("params"),
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
        return bad("ranks",
                   formatString("ranks %d and %d list different buckets for "
                                "group %zu; every member must all-reduce the "
                                "same parameters in the same order",
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
  BP_TRY(top.integer("version", &version, 0));
  if (version != 1)
    return bad("version", formatString("version %lld; this runtime reads "
                                       "version 1",
                                       static_cast<long long>(version)));
  const JsonValue *v = nullptr;
  BP_TRY(top.member("model", &v));
  BP_TRY(parseModel(*v, &m.model));
  BP_TRY(top.member("schedule", &v));
  BP_TRY(parseSchedule(*v, &m.schedule));
  const std::vector<JsonValue> *list = nullptr;
  BP_TRY(top.array("params", &list));
  BP_TRY(parseParams(*list, &m.params));
  BP_TRY(top.array("functions", &list));
  BP_TRY(parseFunctions(*list, &m));
  BP_TRY(top.array("groups", &list));
  BP_TRY(parseGroups(*list, &m));
  BP_TRY(top.array("ranks", &list));
  BP_TRY(parseRanks(*list, &m));
  BP_TRY(checkGroupsAgree(m));
  return m;
}

} // namespace bitpipe::runtime
