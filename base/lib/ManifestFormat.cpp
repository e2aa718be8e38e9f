//===- ManifestFormat.cpp - The manifest's structure, once ----------------===//

#include "bitpipe/base/ManifestFormat.h"

#include "bitpipe/base/JsonTree.h"

#include <cstdio>

namespace bitpipe::manifest {

using base::ErrorCode;
using base::Expected;
using base::formatString;
using base::Status;
using json::JsonValue;

bool roleHasIndex(bp_role_kind kind) {
  return kind == BP_ROLE_SAVED || kind == BP_ROLE_FORWARD_ARG ||
         kind == BP_ROLE_GRAD_OF_RESULT || kind == BP_ROLE_GRAD_OF_ARG ||
         kind == BP_ROLE_STASH;
}

Status error(const std::string &where, const std::string &what) {
  return Status::error(ErrorCode::FormatError,
                       "manifest: " + where + ": " + what);
}

std::string indexed(const std::string &where, size_t i) {
  return where + "[" + std::to_string(i) + "]";
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

namespace {

/// Appends compact JSON to a string: a value, or an object's members with
/// the commas between them.
class Writer {
public:
  explicit Writer(std::string &out) : out_(out) {}

  void value(int64_t v) { out_ += std::to_string(v); }
  void value(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out_ += buf;
  }
  void value(bool v) { out_ += v ? "true" : "false"; }
  void value(std::string_view v) { out_ += json::quote(v); }
  void value(const char *v) { value(std::string_view(v)); }

  /// An object: \p members writes them through member().
  template <typename F> void object(F members) {
    out_ += '{';
    first_.push_back(true);
    members();
    first_.pop_back();
    out_ += '}';
  }
  /// A list of \p items, each written by \p each.
  template <typename T, typename F>
  void list(const std::vector<T> &items, F each) {
    out_ += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i)
        out_ += ',';
      each(items[i]);
    }
    out_ += ']';
  }
  void list(const std::vector<int64_t> &items) {
    list(items, [&](int64_t v) { value(v); });
  }
  void list(const std::vector<std::string> &items) {
    list(items, [&](const std::string &v) { value(v); });
  }

  /// Starts member \p key of the innermost object; its value follows.
  Writer &member(std::string_view key) {
    if (!first_.back())
      out_ += ',';
    first_.back() = false;
    value(key);
    out_ += ':';
    return *this;
  }

private:
  std::string &out_;
  std::vector<bool> first_;
};

void writeRole(Writer &w, const Role &role) {
  w.object([&] {
    const char *word = bp_role_kind_names[role.kind];
    w.member(key::Role).value(word);
    // A parameter's or an input's name is under the role's own word.
    if (role.kind == BP_ROLE_PARAM)
      w.member(word).value(role.param);
    else if (role.kind == BP_ROLE_INPUT)
      w.member(word).value(bp_input_kind_names[role.input]);
    else if (roleHasIndex(role.kind))
      w.member(key::Index).value(role.index);
    w.member(key::Shape).list(role.shape);
    w.member(key::Dtype).value(bp_dtype_names[role.dtype]);
  });
}

} // namespace

std::string writeManifest(const Manifest &m) {
  std::string out;
  Writer w(out);
  w.object([&] {
    w.member(key::Version).value(int64_t(BP_MANIFEST_VERSION));
    w.member(key::Target).object([&] {
      w.member(key::Name).value(bp_target_kind_names[m.target.name]);
      w.member(key::Precision).value(bp_precision_names[m.target.precision]);
    });
    const Model &model = m.model;
    w.member(key::Model).object([&] {
      w.member(key::Name).value(model.name);
      w.member(key::Family).value(bp_model_family_names[model.family]);
      w.member(key::Vocab).value(model.vocab);
      w.member(key::SeqLen).value(model.seqLen);
      w.member(key::MicrobatchSize).value(model.microbatchSize);
      if (model.maskToken)
        w.member(key::MaskToken).value(*model.maskToken);
      if (model.heads)
        w.member(key::Heads).value(*model.heads);
      if (model.maxPositions)
        w.member(key::MaxPositions).value(*model.maxPositions);
      if (model.normEpsilon)
        w.member(key::NormEpsilon).value(*model.normEpsilon);
      if (model.ropeTheta)
        w.member(key::RopeTheta).value(*model.ropeTheta);
      if (model.gelu)
        w.member(key::Gelu).value(bp_gelu_form_names[*model.gelu]);
      if (model.normPosition)
        w.member(key::NormPosition)
            .value(bp_norm_position_names[*model.normPosition]);
      if (model.embeddingDropout)
        w.member(key::EmbeddingDropout).value(*model.embeddingDropout);
      if (model.attentionDropout)
        w.member(key::AttentionDropout).value(*model.attentionDropout);
      if (model.residualDropout)
        w.member(key::ResidualDropout).value(*model.residualDropout);
    });
    const Schedule &s = m.schedule;
    w.member(key::Schedule).object([&] {
      w.member(key::Name).value(s.name);
      w.member(key::Microbatches).value(s.microbatches);
      w.member(key::Devices).value(s.devices);
      w.member(key::DataParallel).value(s.dataParallel);
      w.member(key::WorldSize).value(s.worldSize);
      w.member(key::TransferStreams)
          .value(bp_transfer_streams_names[s.transferStreams]);
      w.member(key::Channels).list(s.channels, [&](const auto &channel) {
        w.list(std::vector<int64_t>{channel.first, channel.second});
      });
      w.member(key::GradientSync).value(bp_gradient_sync_names[s.gradientSync]);
    });
    w.member(key::Params).list(m.params, [&](const Param &p) {
      w.object([&] {
        w.member(key::Name).value(p.name);
        w.member(key::Shape).list(p.shape);
        w.member(key::Init).object([&] {
          w.member(key::Kind).value(bp_init_kind_names[p.init]);
          if (p.init == BP_INIT_NORMAL)
            w.member(key::Std).value(p.stddev);
        });
        w.member(key::Decay).value(p.decay);
      });
    });
    w.member(key::Functions).list(m.functions, [&](const Function &f) {
      w.object([&] {
        w.member(key::Name).value(f.name);
        w.member(key::Kind).value(bp_function_kind_names[f.kind]);
        w.member(key::Stage).value(f.stage);
        w.member(key::Args).list(f.args,
                                 [&](const Role &role) { writeRole(w, role); });
        w.member(key::Results).list(f.results, [&](const Role &role) {
          writeRole(w, role);
        });
      });
    });
    w.member(key::Groups)
        .list(m.groups,
              [&](const std::vector<int64_t> &group) { w.list(group); });
    w.member(key::Ranks).list(m.ranks, [&](const Rank &r) {
      w.object([&] {
        w.member(key::NumValues).value(r.numValues);
        if (r.peakHandles)
          w.member(key::PeakHandles).value(*r.peakHandles);
        if (r.peakSavedBytes)
          w.member(key::PeakSavedBytes).value(*r.peakSavedBytes);
        if (r.predictedBubble)
          w.member(key::PredictedBubble).value(*r.predictedBubble);
        w.member(key::Params).list(r.params);
        w.member(key::Buckets).list(r.buckets, [&](const Bucket &b) {
          w.object([&] {
            w.member(key::Group).value(b.group);
            w.member(key::Params).list(b.params);
          });
        });
      });
    });
  });
  return out;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

/// Typed access to the members of a JSON object, each failure naming the
/// member's path in the manifest.
class Fields {
public:
  Fields(const JsonValue &v, std::string where)
      : v_(v), where_(std::move(where)) {}

  Status object() const {
    return v_.kind == JsonValue::Kind::Object
               ? Status::ok()
               : error(where_, "expected a JSON object");
  }
  bool has(const char *key) const { return v_.get(key) != nullptr; }
  std::string at(const char *key) const { return where_ + "." + key; }

  Status integer(const char *key, int64_t *out, int64_t min) const {
    const JsonValue *m = v_.get(key);
    if (!m)
      return missing(key);
    if (m->kind != JsonValue::Kind::Number || !m->isInteger)
      return error(at(key), "expected an integer");
    if (m->integer < min)
      return error(at(key), formatString("%lld is below %lld",
                                         static_cast<long long>(m->integer),
                                         static_cast<long long>(min)));
    *out = m->integer;
    return Status::ok();
  }
  /// An optional integer: left unset when absent.
  Status integer(const char *key, std::optional<int64_t> *out,
                 int64_t min) const {
    if (!has(key))
      return Status::ok();
    int64_t v = 0;
    BP_TRY(integer(key, &v, min));
    *out = v;
    return Status::ok();
  }
  Status number(const char *key, double *out) const {
    const JsonValue *m = v_.get(key);
    if (!m)
      return missing(key);
    if (m->kind != JsonValue::Kind::Number)
      return error(at(key), "expected a number");
    *out = m->number;
    return Status::ok();
  }
  Status number(const char *key, std::optional<double> *out) const {
    if (!has(key))
      return Status::ok();
    double v = 0;
    BP_TRY(number(key, &v));
    *out = v;
    return Status::ok();
  }
  Status string(const char *key, std::string *out) const {
    const JsonValue *m = v_.get(key);
    if (!m)
      return missing(key);
    if (m->kind != JsonValue::Kind::String)
      return error(at(key), "expected a string");
    *out = m->string;
    return Status::ok();
  }
  Status boolean(const char *key, bool *out) const {
    const JsonValue *m = v_.get(key);
    if (!m)
      return missing(key);
    if (m->kind != JsonValue::Kind::Bool)
      return error(at(key), "expected true or false");
    *out = m->boolean;
    return Status::ok();
  }
  Status array(const char *key, const std::vector<JsonValue> **out) const {
    const JsonValue *m = v_.get(key);
    if (!m)
      return missing(key);
    if (m->kind != JsonValue::Kind::Array)
      return error(at(key), "expected a list");
    *out = &m->array;
    return Status::ok();
  }
  /// A string member that must be one of the words of \p names (a name
  /// table of program.h, from bitpipe/abi/ManifestKeys.def); *out is its
  /// index. \p what names the vocabulary in the error.
  template <typename Enum, size_t N>
  Status word(const char *key, const char *const (&names)[N], const char *what,
              Enum *out) const {
    std::string text;
    BP_TRY(string(key, &text));
    int i = findWord(names, text);
    if (i >= 0) {
      *out = static_cast<Enum>(i);
      return Status::ok();
    }
    std::string expected;
    for (size_t k = 0; k < N; ++k)
      expected += (k ? ", " : "") + std::string(names[k]);
    return error(at(key), std::string("unknown ") + what + " '" + text +
                              "' (expected one of " + expected + ")");
  }
  template <typename Enum, size_t N>
  Status word(const char *key, const char *const (&names)[N], const char *what,
              std::optional<Enum> *out) const {
    if (!has(key))
      return Status::ok();
    Enum v{};
    BP_TRY(word(key, names, what, &v));
    *out = v;
    return Status::ok();
  }
  Status member(const char *key, const JsonValue **out) const {
    const JsonValue *m = v_.get(key);
    if (!m)
      return missing(key);
    *out = m;
    return Status::ok();
  }

private:
  Status missing(const char *key) const {
    return error(where_, std::string("missing \"") + key + "\"");
  }

  const JsonValue &v_;
  std::string where_;
};

Status readIntList(const JsonValue &v, const std::string &where, int64_t min,
                   std::vector<int64_t> *out) {
  if (v.kind != JsonValue::Kind::Array)
    return error(where, "expected a list of integers");
  out->clear();
  for (size_t i = 0; i < v.array.size(); ++i) {
    const JsonValue &e = v.array[i];
    if (e.kind != JsonValue::Kind::Number || !e.isInteger || e.integer < min)
      return error(indexed(where, i),
                   formatString("expected an integer >= %lld",
                                static_cast<long long>(min)));
    out->push_back(e.integer);
  }
  return Status::ok();
}

Status readNames(const JsonValue &v, const std::string &where,
                 std::vector<std::string> *out) {
  if (v.kind != JsonValue::Kind::Array)
    return error(where, "expected a list of parameter names");
  for (size_t i = 0; i < v.array.size(); ++i) {
    const JsonValue &e = v.array[i];
    if (e.kind != JsonValue::Kind::String)
      return error(indexed(where, i), "expected a parameter name");
    out->push_back(e.string);
  }
  return Status::ok();
}

Status readTarget(const JsonValue &v, Target *t) {
  Fields f(v, key::Target);
  BP_TRY(f.object());
  BP_TRY(f.word(key::Name, bp_target_kind_names, "target", &t->name));
  return f.word(key::Precision, bp_precision_names, "precision", &t->precision);
}

Status readModel(const JsonValue &v, Model *m) {
  Fields f(v, key::Model);
  BP_TRY(f.object());
  BP_TRY(f.string(key::Name, &m->name));
  BP_TRY(
      f.word(key::Family, bp_model_family_names, "model family", &m->family));
  BP_TRY(f.integer(key::Vocab, &m->vocab, 1));
  BP_TRY(f.integer(key::SeqLen, &m->seqLen, 1));
  BP_TRY(f.integer(key::MicrobatchSize, &m->microbatchSize, 1));
  BP_TRY(f.integer(key::MaskToken, &m->maskToken, 0));
  BP_TRY(f.integer(key::Heads, &m->heads, 1));
  BP_TRY(f.integer(key::MaxPositions, &m->maxPositions, 1));
  BP_TRY(f.number(key::NormEpsilon, &m->normEpsilon));
  BP_TRY(f.number(key::RopeTheta, &m->ropeTheta));
  BP_TRY(f.word(key::Gelu, bp_gelu_form_names, "GELU form", &m->gelu));
  BP_TRY(f.number(key::EmbeddingDropout, &m->embeddingDropout));
  BP_TRY(f.number(key::AttentionDropout, &m->attentionDropout));
  BP_TRY(f.number(key::ResidualDropout, &m->residualDropout));
  return f.word(key::NormPosition, bp_norm_position_names, "norm position",
                &m->normPosition);
}

Status readSchedule(const JsonValue &v, Schedule *s) {
  Fields f(v, key::Schedule);
  BP_TRY(f.object());
  BP_TRY(f.string(key::Name, &s->name));
  BP_TRY(f.integer(key::Microbatches, &s->microbatches, 1));
  BP_TRY(f.integer(key::Devices, &s->devices, 1));
  BP_TRY(f.integer(key::DataParallel, &s->dataParallel, 1));
  BP_TRY(f.integer(key::WorldSize, &s->worldSize, 1));
  BP_TRY(f.word(key::TransferStreams, bp_transfer_streams_names,
                "transfer streams", &s->transferStreams));
  const std::vector<JsonValue> *channels = nullptr;
  BP_TRY(f.array(key::Channels, &channels));
  for (size_t i = 0; i < channels->size(); ++i) {
    const JsonValue &pair = (*channels)[i];
    bool shaped = pair.kind == JsonValue::Kind::Array && pair.array.size() == 2;
    for (size_t k = 0; shaped && k < 2; ++k)
      shaped = pair.array[k].kind == JsonValue::Kind::Number &&
               pair.array[k].isInteger;
    if (!shaped)
      return error(indexed(f.at(key::Channels), i),
                   "expected a [sender, receiver] pair of pipeline ranks");
    s->channels.emplace_back(pair.array[0].integer, pair.array[1].integer);
  }
  return f.word(key::GradientSync, bp_gradient_sync_names, "gradient sync",
                &s->gradientSync);
}

Status readParams(const std::vector<JsonValue> &list, std::vector<Param> *out) {
  for (size_t i = 0; i < list.size(); ++i) {
    Fields f(list[i], indexed(key::Params, i));
    BP_TRY(f.object());
    Param p;
    BP_TRY(f.string(key::Name, &p.name));
    const JsonValue *shape = nullptr;
    BP_TRY(f.member(key::Shape, &shape));
    BP_TRY(readIntList(*shape, f.at(key::Shape), 1, &p.shape));
    const JsonValue *init = nullptr;
    BP_TRY(f.member(key::Init, &init));
    Fields fi(*init, f.at(key::Init));
    BP_TRY(fi.object());
    BP_TRY(fi.word(key::Kind, bp_init_kind_names, "initialiser", &p.init));
    if (p.init == BP_INIT_NORMAL) {
      BP_TRY(fi.number(key::Std, &p.stddev));
      if (!(p.stddev >= 0))
        return error(fi.at(key::Std), "must be non-negative");
    }
    BP_TRY(f.boolean(key::Decay, &p.decay));
    out->push_back(std::move(p));
  }
  return Status::ok();
}

Status readRole(const JsonValue &v, const std::string &where, Role *role) {
  Fields f(v, where);
  BP_TRY(f.object());
  BP_TRY(f.word(key::Role, bp_role_kind_names, "role", &role->kind));
  const JsonValue *shape = nullptr;
  BP_TRY(f.member(key::Shape, &shape));
  BP_TRY(readIntList(*shape, f.at(key::Shape), 1, &role->shape));
  BP_TRY(f.word(key::Dtype, bp_dtype_names, "dtype", &role->dtype));
  // A parameter's or an input's name is under the role's own word.
  const char *word = bp_role_kind_names[role->kind];
  if (role->kind == BP_ROLE_PARAM)
    BP_TRY(f.string(word, &role->param));
  else if (role->kind == BP_ROLE_INPUT)
    BP_TRY(f.word(word, bp_input_kind_names, "input", &role->input));
  else if (roleHasIndex(role->kind))
    BP_TRY(f.integer(key::Index, &role->index, 0));
  return Status::ok();
}

Status readFunctions(const std::vector<JsonValue> &list,
                     std::vector<Function> *out) {
  for (size_t i = 0; i < list.size(); ++i) {
    std::string where = indexed(key::Functions, i);
    Fields f(list[i], where);
    BP_TRY(f.object());
    Function fn;
    BP_TRY(f.string(key::Name, &fn.name));
    BP_TRY(
        f.word(key::Kind, bp_function_kind_names, "function kind", &fn.kind));
    BP_TRY(f.integer(key::Stage, &fn.stage, 0));
    for (bool isArg : {true, false}) {
      const char *rolesKey = isArg ? key::Args : key::Results;
      const std::vector<JsonValue> *roles = nullptr;
      BP_TRY(f.array(rolesKey, &roles));
      std::vector<Role> &into = isArg ? fn.args : fn.results;
      for (size_t k = 0; k < roles->size(); ++k) {
        Role r;
        BP_TRY(readRole((*roles)[k], indexed(f.at(rolesKey), k), &r));
        into.push_back(std::move(r));
      }
    }
    out->push_back(std::move(fn));
  }
  return Status::ok();
}

Status readRanks(const std::vector<JsonValue> &list, std::vector<Rank> *out) {
  for (size_t r = 0; r < list.size(); ++r) {
    std::string where = indexed(key::Ranks, r);
    Fields f(list[r], where);
    BP_TRY(f.object());
    Rank rank;
    BP_TRY(f.integer(key::NumValues, &rank.numValues, 0));
    BP_TRY(f.integer(key::PeakHandles, &rank.peakHandles, 0));
    BP_TRY(f.integer(key::PeakSavedBytes, &rank.peakSavedBytes, 0));
    BP_TRY(f.number(key::PredictedBubble, &rank.predictedBubble));
    if (rank.predictedBubble &&
        !(*rank.predictedBubble >= 0 && *rank.predictedBubble <= 1))
      return error(f.at(key::PredictedBubble),
                   "expected a share in [0, 1], got " +
                       std::to_string(*rank.predictedBubble));
    const JsonValue *params = nullptr;
    BP_TRY(f.member(key::Params, &params));
    BP_TRY(readNames(*params, f.at(key::Params), &rank.params));
    const std::vector<JsonValue> *buckets = nullptr;
    BP_TRY(f.array(key::Buckets, &buckets));
    for (size_t b = 0; b < buckets->size(); ++b) {
      Fields fb((*buckets)[b], indexed(f.at(key::Buckets), b));
      BP_TRY(fb.object());
      Bucket bucket;
      BP_TRY(fb.integer(key::Group, &bucket.group, 0));
      const JsonValue *names = nullptr;
      BP_TRY(fb.member(key::Params, &names));
      BP_TRY(readNames(*names, fb.at(key::Params), &bucket.params));
      rank.buckets.push_back(std::move(bucket));
    }
    out->push_back(std::move(rank));
  }
  return Status::ok();
}

} // namespace

Expected<Manifest> readManifest(std::string_view text) {
  JsonValue root;
  json::JsonError jsonError;
  if (!json::readJson(text, root, jsonError))
    return Status::error(ErrorCode::FormatError,
                         formatString("manifest: JSON: %s at byte %zu",
                                      jsonError.what.c_str(),
                                      jsonError.offset));
  Manifest m;
  Fields top(root, "manifest");
  BP_TRY(top.object());
  int64_t version = 0;
  BP_TRY(top.integer(key::Version, &version, 0));
  // First, before anything whose meaning may have changed between versions.
  if (version != BP_MANIFEST_VERSION)
    return error(key::Version,
                 formatString("the program's manifest is version %lld, but "
                              "this runtime reads version %d only; link the "
                              "model with the runtime of the bitpipe-compile "
                              "that compiled it",
                              static_cast<long long>(version),
                              BP_MANIFEST_VERSION));
  const JsonValue *v = nullptr;
  BP_TRY(top.member(key::Target, &v));
  BP_TRY(readTarget(*v, &m.target));
  BP_TRY(top.member(key::Model, &v));
  BP_TRY(readModel(*v, &m.model));
  BP_TRY(top.member(key::Schedule, &v));
  BP_TRY(readSchedule(*v, &m.schedule));
  const std::vector<JsonValue> *list = nullptr;
  BP_TRY(top.array(key::Params, &list));
  BP_TRY(readParams(*list, &m.params));
  BP_TRY(top.array(key::Functions, &list));
  BP_TRY(readFunctions(*list, &m.functions));
  BP_TRY(top.array(key::Groups, &list));
  for (size_t i = 0; i < list->size(); ++i) {
    std::vector<int64_t> group;
    BP_TRY(readIntList((*list)[i], indexed(key::Groups, i), 0, &group));
    m.groups.push_back(std::move(group));
  }
  BP_TRY(top.array(key::Ranks, &list));
  BP_TRY(readRanks(*list, &m.ranks));
  return m;
}

} // namespace bitpipe::manifest
