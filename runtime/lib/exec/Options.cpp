//===- Options.cpp - Command-line flags of a training executable -*- C++ -*-===//

#include "Options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <vector>

namespace bitpipe::runtime {

namespace {

Status badValue(const std::string &flag, const std::string &value,
                const char *want) {
  return Status::error(ErrorCode::InvalidArgument,
                       "flag " + flag + ": '" + value + "' is not " + want);
}

Status parseInt(const std::string &flag, const std::string &v, int64_t min,
                int64_t *out) {
  char *end = nullptr;
  errno = 0;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || x < min)
    return badValue(flag, v,
                    min > 0 ? "a positive integer" : "a non-negative integer");
  *out = x;
  return Status::ok();
}

Status parseDouble(const std::string &flag, const std::string &v, double min,
                   bool strict, double *out) {
  char *end = nullptr;
  errno = 0;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno != 0 || !std::isfinite(x) ||
      x < min || (strict && x == min))
    return badValue(flag, v,
                    strict ? "a positive number" : "a non-negative number");
  *out = x;
  return Status::ok();
}

struct Flag {
  const char *name;
  const char *arg; // null: takes no value
  const char *help;
  std::function<Status(const std::string &flag, const std::string &value)>
      apply;
};

std::vector<Flag> flags(TrainOptions &o) {
  return {
      {"--data", "PATH", "flat token file (required)",
       [&o](const std::string &, const std::string &v) {
         o.dataPath = v;
         return Status::ok();
       }},
      {"--data-dtype", "u16|u32", "token type of --data (default u16)",
       [&o](const std::string &f, const std::string &v) {
         if (v == "u16")
           o.dataDType = TokenDType::U16;
         else if (v == "u32")
           o.dataDType = TokenDType::U32;
         else
           return badValue(f, v, "u16 or u32");
         return Status::ok();
       }},
      {"--sampling", "random|sequential",
       "random windows (default) or consecutive ones",
       [&o](const std::string &f, const std::string &v) {
         if (v == "random")
           o.sampling = SamplingMode::Random;
         else if (v == "sequential")
           o.sampling = SamplingMode::Sequential;
         else
           return badValue(f, v, "random or sequential");
         return Status::ok();
       }},
      {"--steps", "N", "train until the step count reaches N (required)",
       [&o](const std::string &f, const std::string &v) {
         return parseInt(f, v, 0, &o.steps);
       }},
      {"--lr", "X", "AdamW learning rate (default 1e-3)",
       [&o](const std::string &f, const std::string &v) {
         return parseDouble(f, v, 0, true, &o.adam.lr);
       }},
      {"--weight-decay", "X", "AdamW weight decay (default 0.01)",
       [&o](const std::string &f, const std::string &v) {
         return parseDouble(f, v, 0, false, &o.adam.weightDecay);
       }},
      {"--max-grad-norm", "X",
       "clip the global gradient norm to X (default 0: no clipping)",
       [&o](const std::string &f, const std::string &v) {
         return parseDouble(f, v, 0, false, &o.adam.maxGradNorm);
       }},
      {"--seed", "N", "seed of the initial weights and the sampling (default 0)",
       [&o](const std::string &f, const std::string &v) {
         int64_t s = 0;
         Status st = parseInt(f, v, 0, &s);
         o.seed = static_cast<uint64_t>(s);
         o.seedGiven = true;
         return st;
       }},
      {"--load", "PATH", "resume from this checkpoint (safetensors)",
       [&o](const std::string &, const std::string &v) {
         o.loadPath = v;
         return Status::ok();
       }},
      {"--save", "PATH", "write the checkpoint here (at the end)",
       [&o](const std::string &, const std::string &v) {
         o.savePath = v;
         return Status::ok();
       }},
      {"--save-every", "K", "also save every K steps",
       [&o](const std::string &f, const std::string &v) {
         return parseInt(f, v, 1, &o.saveEvery);
       }},
      {"--trace", "PATH", "Chrome trace of the run, all ranks",
       [&o](const std::string &, const std::string &v) {
         o.tracePath = v;
         return Status::ok();
       }},
      {"--metrics", "PATH",
       "JSON lines {step, loss, grad_norm, tokens_per_s, seconds, bubble "
       "(per rank)}",
       [&o](const std::string &, const std::string &v) {
         o.metricsPath = v;
         return Status::ok();
       }},
      {"--log-interval", "K", "print the step line every K steps (default 1)",
       [&o](const std::string &f, const std::string &v) {
         return parseInt(f, v, 1, &o.logInterval);
       }},
      {"--progress", nullptr,
       "draw the progress bar under mpirun too (default: only when not "
       "launched by mpirun and the output is a terminal)",
       [&o](const std::string &, const std::string &) {
         o.progress = true;
         return Status::ok();
       }},
      {"--dump-rank-params", "DIR",
       "at the end, each rank writes DIR/rank<R>.safetensors",
       [&o](const std::string &, const std::string &v) {
         o.dumpRankParamsDir = v;
         return Status::ok();
       }},
      {"--timeout", "SECONDS",
       "communication deadline (default $BITPIPE_COMM_TIMEOUT or 300)",
       [&o](const std::string &f, const std::string &v) {
         return parseDouble(f, v, 0, true, &o.timeoutSeconds);
       }},
      {"--help", nullptr, "this text",
       [&o](const std::string &, const std::string &) {
         o.help = true;
         return Status::ok();
       }},
  };
}

} // namespace

Expected<TrainOptions> parseTrainOptions(int argc, char **argv) {
  TrainOptions o;
  std::vector<Flag> table = flags(o);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string name = arg, value;
    bool inlineValue = false;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 &&
                                   eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inlineValue = true;
    }
    const Flag *flag = nullptr;
    for (const Flag &f : table)
      if (name == f.name)
        flag = &f;
    if (!flag)
      return Status::error(ErrorCode::InvalidArgument,
                           "unknown flag '" + arg + "' (see --help)");
    if (!flag->arg) {
      if (inlineValue)
        return Status::error(ErrorCode::InvalidArgument,
                             "flag " + name + " takes no value");
    } else if (!inlineValue) {
      if (i + 1 >= argc)
        return Status::error(ErrorCode::InvalidArgument,
                             "flag " + name + " needs a value (" +
                                 flag->arg + ")");
      value = argv[++i];
    }
    Status s = flag->apply(name, value);
    if (!s.isOk())
      return s;
  }
  if (o.help)
    return o;
  if (o.dataPath.empty())
    return Status::error(ErrorCode::InvalidArgument,
                         "missing --data PATH (the token file)");
  if (o.steps < 0)
    return Status::error(ErrorCode::InvalidArgument,
                         "missing --steps N (the step count to reach)");
  if (o.saveEvery > 0 && o.savePath.empty())
    return Status::error(ErrorCode::InvalidArgument,
                         "--save-every needs --save PATH");
  return o;
}

std::string trainUsage(const char *program) {
  TrainOptions o;
  std::string text = formatString(
      "usage: mpirun -np <world size> %s --data PATH --steps N [flags]\n"
      "\nTrains the compiled model pipeline-parallel.\n\nflags:\n",
      program);
  for (const Flag &f : flags(o)) {
    std::string left = std::string("  ") + f.name;
    if (f.arg)
      left += std::string(" ") + f.arg;
    if (left.size() < 32)
      left.resize(32, ' ');
    else
      left += "\n" + std::string(32, ' ');
    text += left + f.help + "\n";
  }
  return text;
}

} // namespace bitpipe::runtime
