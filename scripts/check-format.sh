#!/usr/bin/env bash
# Checks that C and C++ sources are formatted as .clang-format says, with
# clang-format 19 (Debian package clang-format-19, which scripts/install-deps.sh
# installs; CLANG_FORMAT=PATH picks another binary).
#
#   scripts/check-format.sh         lines changed since HEAD~1 (what CI runs:
#                                   the commit it checks out)
#   scripts/check-format.sh BASE    lines changed since the merge base of BASE
#                                   and HEAD, committed or not (a branch:
#                                   scripts/check-format.sh origin/main)
#   scripts/check-format.sh --all   every tracked file in full; lists those
#                                   clang-format would change
#
# Only changed lines are checked by default because older files predate the
# format rule. Prints the diff that would format the changed lines and exits 1
# when there is one; exits 0 with a one-line summary otherwise, and also when
# there is no base to compare with (a single-commit or shallow clone).
# Files: *.h *.cpp *.c *.cu *.cuh outside test/ (lit inputs keep their layout:
# their tests name lines by number). *.def (X-macro lists) and the generated
# *.inc are not checked.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

files_() { # "1 file", "2 files"
  if [ "$1" -eq 1 ]; then echo "1 file"; else echo "$1 files"; fi
}

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
}

all=0
base_arg=""
case $# in
  0) ;;
  1)
    case $1 in
      -h | --help) usage; exit 0 ;;
      --all) all=1 ;;
      -*) echo "format: unknown option $1" >&2; usage >&2; exit 2 ;;
      *) base_arg=$1 ;;
    esac
    ;;
  *) usage >&2; exit 2 ;;
esac

# The checked files, as git pathspecs (relative to the repository root).
pathspec=('*.h' '*.cpp' '*.c' '*.cu' '*.cuh' ':(exclude)test/**')
extensions=h,cpp,c,cu,cuh

# clang-format 19 exactly: other versions format some constructs differently.
pick() {
  local c
  for c in "$@"; do
    if [ -n "$c" ] && command -v "$c" >/dev/null 2>&1; then
      command -v "$c"
      return 0
    fi
  done
  return 1
}
if ! clang_format=$(pick "${CLANG_FORMAT:-}" clang-format-19 \
  /usr/lib/llvm-19/bin/clang-format); then
  echo "format: clang-format 19 not found; it comes with the Debian package" \
    "clang-format-19 (scripts/install-deps.sh installs it)" >&2
  exit 1
fi

if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "format: $root is not a git checkout" \
    "($(git rev-parse 2>&1 | head -n1)); nothing checked"
  exit 0
fi

if [ $all -eq 1 ]; then
  mapfile -d '' files < <(git ls-files -z -- "${pathspec[@]}")
  # --dry-run prints "FILE:LINE:COL: warning: code should be clang-formatted"
  # for each difference (one a file is enough to list it). Each batch writes
  # its own file: parallel batches would interleave on one pipe.
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  if ! printf '%s\0' "${files[@]}" | TMP=$tmp xargs -0 -r -n 16 -P "$(nproc)" \
    sh -c 'exec "$0" --dry-run --ferror-limit=1 "$@" \
      >"$(mktemp "$TMP/XXXXXX")" 2>&1' "$clang_format"; then
    cat "$tmp"/* | grep -v ': warning: code should be clang-formatted' >&2 ||
      true
    echo "format: $clang_format failed" >&2
    exit 2
  fi
  warning='warning: code should be clang-formatted'
  mapfile -t bad < <(cat "$tmp"/* |
    sed -n "s/^\(.*\):[0-9]*:[0-9]*: $warning.*/\1/p" | sort -u)
  if [ ${#bad[@]} -eq 0 ]; then
    echo "format: all $(files_ ${#files[@]}) formatted"
    exit 0
  fi
  printf '%s\n' "${bad[@]}"
  echo "format: ${#bad[@]} of $(files_ ${#files[@]}) would change" \
    "($(basename "$clang_format") -i FILE formats one)"
  exit 1
fi

git_clang_format=$(pick "$(dirname "$clang_format")/git-clang-format-19" \
  git-clang-format-19 /usr/lib/llvm-19/bin/git-clang-format) || {
  echo "format: git-clang-format-19 not found; it comes with the Debian" \
    "package clang-format-19 (scripts/install-deps.sh installs it)" >&2
  exit 1
}

if [ -z "$base_arg" ]; then
  if ! base=$(git rev-parse -q --verify 'HEAD~1^{commit}'); then
    echo "format: HEAD has no parent here (a single-commit or shallow clone);" \
      "nothing checked"
    exit 0
  fi
  base_name="HEAD~1 ($(git rev-parse --short "$base"))"
else
  if ! git rev-parse -q --verify "$base_arg^{commit}" >/dev/null; then
    echo "format: $base_arg is not a commit here" >&2
    exit 2
  fi
  if base=$(git merge-base "$base_arg" HEAD 2>/dev/null); then
    base_name="$base_arg (merge base $(git rev-parse --short "$base"))"
  else
    # Shallow or unrelated history: compare with BASE itself.
    base=$(git rev-parse "$base_arg^{commit}")
    base_name="$base_arg (no merge base with HEAD here)"
  fi
fi

# What git clang-format will look at: files changed between the base and the
# working tree (that is, HEAD in a clean checkout), still present.
mapfile -d '' files < <(git diff -z --name-only --diff-filter=d --no-renames \
  "$base" -- "${pathspec[@]}")
if [ ${#files[@]} -eq 0 ]; then
  echo "format: no C/C++ files changed against $base_name"
  exit 0
fi

# git clang-format formats the changed lines of each file (as diff -U0 shows
# them) and prints the difference; exit status 1 when there is one.
rc=0
out=$(GIT_PAGER=cat "$git_clang_format" --binary "$clang_format" \
  --extensions "$extensions" --style file --diff -q "$base" -- \
  "${files[@]}" 2>&1) || rc=$?
if [ $rc -eq 0 ]; then
  echo "format: $(files_ ${#files[@]}) checked against $base_name," \
    "all formatted"
  exit 0
fi
printf '%s\n' "$out"
if [ $rc -ne 1 ]; then
  echo "format: git clang-format failed (exit status $rc)" >&2
  exit 2
fi
nbad=$(printf '%s\n' "$out" | grep -c '^diff --git' || true)
echo "format: $nbad of $(files_ ${#files[@]}) checked against $base_name have" \
  "unformatted changed lines; the diff above formats them, as does:" \
  "$git_clang_format --binary $clang_format --extensions $extensions" \
  "$(git rev-parse --short "$base")"
exit 1
