//===- Communicator.cpp - Defaults shared by every transport ----*- C++ -*-===//

#include "Communicator.h"

#include "bitpipe/program.h"
#include "core/Flags.h"

#include <cstdlib>
#include <set>

namespace bitpipe::runtime {

static_assert(static_cast<int>(TransferStreams::Channel) ==
                  BP_TRANSFER_STREAMS_CHANNEL &&
              static_cast<int>(TransferStreams::Shared) ==
                  BP_TRANSFER_STREAMS_SHARED,
              "TransferStreams must number its values as program.h does");

const char *transferStreamsName(TransferStreams streams) {
  // Checked: a message about a corrupt value must not read past the table.
  int k = static_cast<int>(streams);
  return k >= 0 && k < BP_NUM_TRANSFER_STREAMS ? bp_transfer_streams_names[k]
                                                : "?";
}

Status checkChannels(int rank, int size, const std::vector<Channel> &channels) {
  std::set<Channel> seen;
  for (size_t i = 0; i < channels.size(); ++i) {
    const auto [from, to] = channels[i];
    const char *wrong = nullptr;
    if (from < 0 || from >= size || to < 0 || to >= size)
      wrong = "a rank outside the world";
    else if (from == to)
      wrong = "a rank sending to itself";
    else if (!seen.insert(channels[i]).second)
      wrong = "listed twice";
    if (wrong)
      return Status::error(ErrorCode::InvalidArgument,
                           formatString("rank %d: channel %zu (rank %d -> "
                                        "rank %d) is %s; expected distinct "
                                        "channels between two ranks in [0, "
                                        "%d)",
                                        rank, i, from, to, wrong, size));
  }
  return Status::ok();
}

Expected<std::optional<double>> commTimeoutFromEnvironment() {
  const char *env = std::getenv(kCommTimeoutVariable);
  if (!env)
    return std::optional<double>();
  // --timeout's range (exec/Options.cpp).
  std::string want;
  std::optional<double> seconds = parseBoundedNumber(
      env, 0, /*strict=*/true, kMaxCommTimeoutSeconds, &want);
  if (!seconds)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("environment variable %s: '%s' is not "
                                      "%s (seconds)",
                                      kCommTimeoutVariable, env, want.c_str()));
  return seconds;
}

double defaultCommTimeoutSeconds() {
  Expected<std::optional<double>> env = commTimeoutFromEnvironment();
  return env.isOk() && *env ? **env : 300.0;
}

Communicator::Communicator() : timeoutSeconds_(defaultCommTimeoutSeconds()) {}
Communicator::~Communicator() = default;

} // namespace bitpipe::runtime
