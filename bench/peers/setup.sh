#!/usr/bin/env bash
# setup.sh: a pinned peer environment, torch, transformers, safetensors and
# numpy at the versions of bench/peers/requirements.txt, in a Python virtual
# environment in a cache folder, for the comparisons that run bitpipe beside
# PyTorch and Hugging Face on the same model. Nothing in the build or in
# ctest depends on it.
#
#   bench/peers/setup.sh [--print-dir | --help]
#     --print-dir  print the environment's folder (whether or not it exists)
#                  and exit
#   BITPIPE_PEERS_DIR     the environment's folder (default
#                         ${XDG_CACHE_HOME:-$HOME/.cache}/bitpipe/peers-HASH,
#                         HASH: of the pins, so that a changed pin makes a new
#                         environment beside the old one)
#   BITPIPE_PEERS_PYTHON  the interpreter (default /usr/bin/python3, Debian
#                         12's 3.11, else python3): CPython 3.11, since the
#                         pins' hashes are those of the cp311 wheels
#
# A filled folder is reused without touching the network (no pip, no apt):
# the script only imports the four packages from it. A new one is built in
# a temporary folder beside it (peers-HASH.tmp.*), checked, and renamed into
# place with its marker file (.bitpipe-peers) inside, so that a run stopped
# half-way leaves no folder that looks complete; a lock (peers-HASH.lock)
# keeps two runs from building it at once. The install takes about 2.4 GiB
# of downloads and 4.3 GiB of disk (bench/peers/README.md: why PyPI's
# torch carries CUDA's libraries even here, and which are left out).
#
# Debian's python3 needs python3-venv (ensurepip) to make an environment:
# installed with apt-get as scripts/install-deps.sh does, when missing.
#
# Ends with one line: what is in the environment, where, its size and how
# long the install took, or that it was reused. Exit status 1 with a
# message naming the step when anything fails, 2 on a wrong argument.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
req=$here/requirements.txt
marker=.bitpipe-peers

usage() { sed -n '2,/^set -euo pipefail/{/^set /d;s/^# \{0,1\}//;p}' "$0"; }
print_dir=0
case "${1:-}" in
--print-dir) print_dir=1 ;;
--help | -h) usage; exit 0 ;;
"") ;;
*) usage >&2; exit 2 ;;
esac
[ $# -le 1 ] || { usage >&2; exit 2; }

die() { echo "peers: FAILED: $*" >&2; exit 1; }

# The pins' hash: requirement lines only, so that a comment does not make a
# new environment.
pins=$(sed -e 's/#.*//' -e 's/[[:space:]\\]//g' "$req" | grep -v '^$' | sha256sum | cut -c1-12)
dir=${BITPIPE_PEERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/bitpipe/peers-$pins}
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac # scripts in it name it
if [ "$print_dir" = 1 ]; then
  echo "$dir"
  exit 0
fi

# check PYTHON: imports the four packages, runs a small torch computation,
# and fails where a CUDA library came from outside the environment (a
# machine with its own CUDA, like the build machine's /usr/local/cuda-*,
# must not hide a missing wheel). Prints "python V torch V transformers V
# safetensors V numpy V". Nothing here reaches the network.
check() {
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$1" -I - <<'EOF'
import os, platform, re, sys
import numpy, safetensors, torch, transformers
from safetensors.torch import load, save

x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
y = x @ x.T  # [[5, 14], [14, 50]]
if y.sum().item() != 83.0 or not torch.equal(load(save({"y": y}))["y"], y):
    sys.exit("a 2x3 matmul and its safetensors round trip gave %s" % y.tolist())
if numpy.asarray(y).sum() != 83.0:
    sys.exit("numpy read the torch tensor wrongly")
prefix = os.path.realpath(sys.prefix) + os.sep
cuda = re.compile(r"/lib(cuda|cublas|cudnn|cufft|cufile|cupti|curand|cusolver|cusparse|nccl|nvJitLink|nvrtc|nvshmem|nvToolsExt)[^/]*\.so[^/]*$")
with open("/proc/self/maps") as maps:
    outside = sorted({l.split()[-1] for l in maps if cuda.search(l.split()[-1])
                      and not os.path.realpath(l.split()[-1]).startswith(prefix)})
if outside:
    sys.exit("CUDA libraries loaded from outside %s: %s" % (sys.prefix, " ".join(outside)))
print("python", platform.python_version(), "torch", torch.__version__,
      "transformers", transformers.__version__, "safetensors", safetensors.__version__,
      "numpy", numpy.__version__)
EOF
}

mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
if ! flock -n 9; then
  echo "peers: another setup.sh holds $dir.lock; waiting"
  flock 9
fi

if [ -f "$dir/$marker" ]; then
  made_for=$(sed -n 's/^pins: //p' "$dir/$marker")
  [ "$made_for" = "$pins" ] ||
    die "$dir was made for other pins ($made_for, these are $pins): remove it or choose another BITPIPE_PEERS_DIR"
  versions=$(check "$dir/bin/python") ||
    die "$dir is there but does not pass its check (above): remove it to install it anew"
  echo "peers: $versions in $dir (reused, $(du -sm "$dir" | cut -f1) MiB)"
  exit 0
fi

# A new environment. Left-overs of a stopped run: a folder without its
# marker (not made by this script's rename) and temporary folders.
[ -e "$dir" ] && { echo "peers: $dir has no $marker (a stopped install?): removing it"; rm -rf "$dir"; }
rm -rf "$dir".tmp.*

[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] ||
  die "the pins are for Linux x86_64, this is $(uname -s) $(uname -m)"
py=${BITPIPE_PEERS_PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 || true)}
[ -n "$py" ] || die "no python3 (set BITPIPE_PEERS_PYTHON)"
"$py" -c 'import platform, sys; sys.exit(not (sys.version_info[:2] == (3, 11) and platform.python_implementation() == "CPython"))' ||
  die "$py is not CPython 3.11 ($("$py" -V 2>&1 || echo "no answer to -V")): the pins are cp311 wheels (set BITPIPE_PEERS_PYTHON)"
if ! "$py" -c 'import ensurepip, venv' 2>/dev/null; then
  # Debian's python3 makes environments only with python3-venv (ensurepip).
  if [ "$py" != /usr/bin/python3 ] || ! command -v apt-get >/dev/null; then
    die "$py cannot make a virtual environment (no ensurepip/venv)"
  fi
  echo "peers: installing python3-venv"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends python3-venv
fi

tmp=$dir.tmp.$$ # under the lock; mkdir keeps the umask (mktemp -d: 0700)
mkdir "$tmp"
trap 'rm -rf "$tmp"' EXIT
log=$dir.install.log
start=$(date +%s)
echo "peers: installing $(grep -c '^[A-Za-z0-9].*==' "$req") pinned packages (about 2.4 GiB to download) into $dir (pip's output: $log)"
"$py" -m venv "$tmp" >"$log" 2>&1 || { tail -20 "$log" >&2; die "$py -m venv (log: $log)"; }
# --no-deps: the pins are the whole set, torch's CUDA-only requirements
# deliberately absent (requirements.txt's header). No pip cache: the
# environment is the cache; a second copy of the wheels would double it.
"$tmp/bin/python" -m pip install --no-deps --require-hashes --only-binary=:all: \
  --no-cache-dir --disable-pip-version-check --progress-bar off -r "$req" >>"$log" 2>&1 ||
  { tail -30 "$log" >&2; die "pip install -r $req (log: $log)"; }

# Exactly the pins and nothing else, pip (which comes with the environment)
# aside: an interpreter whose ensurepip brings more would show here.
norm() { # requirement lines -> name==version, names in PEP 503's spelling
  sed -e 's/#.*//' -e 's/[[:space:]]*\\$//' | awk -F'==' 'NF == 2 {
    n = tolower($1); gsub(/[-_.]+/, "-", n); gsub(/[[:space:]]/, "", n); print n "==" $2 }' | sort
}
want=$(norm <"$req")
have=$("$tmp/bin/python" -m pip freeze --all --exclude pip --disable-pip-version-check 2>>"$log" | norm)
[ "$want" = "$have" ] || {
  diff <(echo "$want") <(echo "$have") >&2 || true
  die "the environment's packages (>) differ from the pins (<)"
}

# A virtual environment names its folder in its scripts' first lines, the
# activate scripts and pyvenv.cfg: point those at the final name.
"$py" - "$tmp" "$dir" <<'EOF' || die "renaming $tmp in the environment's scripts"
import os, sys
old, new = sys.argv[1].encode(), sys.argv[2].encode()
paths = [os.path.join(old.decode(), "pyvenv.cfg")]
paths += [e.path for e in os.scandir(os.path.join(old.decode(), "bin")) if e.is_file(follow_symlinks=False)]
for p in paths:
    with open(p, "rb") as f:
        data = f.read()
    if old in data and b"\0" not in data:
        with open(p, "wb") as f:
            f.write(data.replace(old, new))
EOF
left=$(grep -rlsF "$tmp" "$tmp/bin" "$tmp/pyvenv.cfg" || true)
[ -z "$left" ] || die "still naming $tmp: $left"

versions=$(check "$tmp/bin/python") || die "the new environment does not pass its check (above)"
seconds=$(($(date +%s) - start))
size=$(du -sm "$tmp" | cut -f1)
{
  echo "pins: $pins"
  echo "made: $(date -u +%Y-%m-%dT%H:%MZ) by bench/peers/setup.sh with $py, in $seconds s"
  echo "size: $size MiB"
  echo "$versions"
} >"$tmp/$marker"
mv -T "$tmp" "$dir"
trap - EXIT

echo "peers: installed:"
echo "$have" | fmt -w 76 | sed 's/^/  /'
if [ -z "${BITPIPE_PEERS_DIR:-}" ]; then
  others=""
  for d in "$(dirname "$dir")"/peers-*; do
    [ -d "$d" ] && [ "$d" != "$dir" ] && [[ $d != *.tmp.* ]] && others+=" $(basename "$d")"
  done
  [ -z "$others" ] ||
    echo "peers: environments of earlier pins in $(dirname "$dir") (remove them when no longer needed):$others"
fi
echo "peers: $versions in $dir ($size MiB, installed in $seconds s)"
