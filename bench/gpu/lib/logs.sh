# shellcheck shell=bash
# logs.sh: bench/gpu/check.sh's logs, packed into one archive that the
# device tool brings back (sourced). The tool returns a file of at most
# 16 MiB; a trace or a sanitizer's log can be larger than that alone, so
# the archive is kept under logs_limit by cutting the largest logs to
# their head and tail (where a failure's cause and its end are), smaller
# each time, until it fits.
logs_limit=$((15 * 1024 * 1024))

# logs_cut_to DIR KEEP: every file in DIR over KEEP bytes becomes its first
# and last KEEP/2 bytes around a line that says so; adds its name (under
# DIR's parent) to logs_cut.
logs_cut_to() {
  local dir=$1 keep=$2 f size
  while IFS= read -r -d '' f; do
    size=$(stat -c %s "$f")
    {
      head -c $((keep / 2)) "$f"
      printf '\n[check.sh: %d bytes of this %d-byte log cut here, to keep logs.tar.gz under %d bytes]\n' \
        $((size - keep)) "$size" "$logs_limit"
      tail -c $((keep / 2)) "$f"
    } >"$f.cut" && mv "$f.cut" "$f"
    case " ${logs_cut[*]:-} " in
    *" ${f#"$(dirname "$dir")"/} "*) ;;
    *) logs_cut+=("${f#"$(dirname "$dir")"/}") ;;
    esac
  done < <(find "$dir" -type f -size +"$keep"c -print0)
}

# logs_pack DIR ARCHIVE: DIR as a .tar.gz under logs_limit bytes, the logs
# cut to 4 MiB, 1 MiB, ... 16 KiB until it fits. Sets logs_cut (the logs
# it had to cut) and logs_keep (the bytes each of them kept); returns 1
# when even 16 KiB each does not fit.
logs_pack() {
  local dir=$1 archive=$2 keep=$((16 * 1024 * 1024))
  logs_cut=() logs_keep=""
  while :; do
    tar -C "$(dirname "$dir")" -czf "$archive" "$(basename "$dir")" || return 1
    [ "$(stat -c %s "$archive")" -lt "$logs_limit" ] && return 0
    keep=$((keep / 4))
    [ "$keep" -ge 16384 ] || return 1
    logs_cut_to "$dir" "$keep"
    logs_keep=$keep
  done
}
