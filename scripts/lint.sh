#!/usr/bin/env bash
# Lints the C/C++ lines that changed since BASE: clang-format (.clang-format) and clang-tidy
# (.clang-tidy, with the compile commands of the test build, build/test). Exits non-zero on any
# finding; .ci/run runs it after `make test`.
#
#   scripts/lint.sh [BASE]
#
# BASE: a commit; default $FLUXION_LINT_BASE, else HEAD~20 (the root commit when the history is
# shorter). Twenty commits cover a typical branch and whatever a CI run was asked to check, while
# a run stays short (clang-tidy takes seconds per file). In a shallow clone the base is the oldest
# commit present. Set FLUXION_LINT_BASE to a branch point (origin/main) to lint exactly a branch.
#
# What is checked: the subjects of the commits since BASE (at most 72 characters); the lines that differ between BASE and the working tree (committed or not) in
# the .c/.cc/.cpp/.h/.hpp files that still exist. Only those lines, because the files written
# before .clang-format existed were not reformatted: touching one line of an old file does not
# ask for the whole file to be reformatted. clang-format checks the changed lines of every such
# file; clang-tidy runs on the changed .cpp files that build/test/compile_commands.json lists and
# reports findings on the changed lines of any changed file (a header's through the .cpp files).
#
# Environment: FLUXION_LINT_BASE (above); FLUXION_LINT_BUILD, the build folder whose
# compile_commands.json clang-tidy reads (default build/test); JOBS, clang-tidy processes at once
# (default: all cores); CLANG_FORMAT, CLANG_TIDY, the tools (default clang-format, clang-tidy-19:
# clang-tidy 14 cannot parse libstdc++ 12's <source_location>, which every public header uses).
set -euo pipefail
cd "$(dirname "$0")/.."

clang_format=${CLANG_FORMAT:-clang-format}
clang_tidy=${CLANG_TIDY:-clang-tidy-19}
build=${FLUXION_LINT_BUILD:-build/test}
jobs=${JOBS:-$(nproc)}

base=${1:-${FLUXION_LINT_BASE:-}}
if [[ -z "$base" ]]; then
  if git rev-parse -q --verify HEAD~20 >/dev/null; then
    base=HEAD~20
  else
    base=$(git rev-list --max-parents=0 HEAD | tail -n 1)
  fi
fi
base_commit=$(git rev-parse --verify -q "$base^{commit}") || { echo "lint: no commit '$base'" >&2; exit 2; }

# Commit subjects: at most 72 characters, so that `git log --oneline` can be scanned (details go
# in the body; docs/testing.md, "Commits"). Checked for the commits since BASE that came after
# the rule did (c332ac2 is the last commit before it).
rule_start=c332ac2
exclude=()
if git rev-parse -q --verify "$rule_start^{commit}" >/dev/null; then exclude=("^$rule_start"); fi
long_subjects=$(git log --format='%h %s' "$base_commit..HEAD" "${exclude[@]}" | awk 'length($0) - index($0, " ") > 72')
if [[ -n "$long_subjects" ]]; then
  echo "lint: commit subjects over 72 characters:" >&2
  echo "$long_subjects" >&2
  exit 1
fi

mapfile -t files < <(git diff --name-only --diff-filter=ACMR "$base_commit" -- \
  '*.c' '*.cc' '*.cpp' '*.h' '*.hpp' | while read -r f; do [[ -f "$f" ]] && echo "$f"; done)
echo "lint: ${#files[@]} C/C++ files changed since $base ($(git rev-parse --short "$base_commit"))"
if [[ ${#files[@]} -eq 0 ]]; then
  exit 0
fi

# A file moved since BASE is compared with its old path, so moved code does not count as new.
declare -A moved_from
while IFS=$'\t' read -r _ old new; do moved_from[$new]=$old; done < <(git diff --name-status -M --diff-filter=R "$base_commit")

# The changed line ranges of FILE as "first:last" pairs, one per line (new side of the diff).
changed_ranges() {
  git diff -U0 -M --no-color "$base_commit" -- "$1" ${moved_from[$1]:+"${moved_from[$1]}"} | sed -n 's/^@@ [^+]*+\([0-9]*\)\(,\([0-9]*\)\)\? @@.*/\1 \3/p' |
    while read -r first count; do
      count=${count:-1}
      if [[ $count -gt 0 ]]; then echo "$first:$((first + count - 1))"; fi
    done
}

status=0
format_failed=()
checked=()     # files with changed lines
entries=()     # clang-tidy's line filter: {"name": path, "lines": [[first, last], ...]} per file
for f in "${files[@]}"; do
  mapfile -t ranges < <(changed_ranges "$f")
  [[ ${#ranges[@]} -eq 0 ]] && continue
  checked+=("$f")
  line_args=()
  json_ranges=()
  for r in "${ranges[@]}"; do
    line_args+=("--lines=$r")
    json_ranges+=("[${r%%:*},${r##*:}]")
  done
  if ! "$clang_format" --dry-run --Werror "${line_args[@]}" "$f"; then
    format_failed+=("$f")
  fi
  entries+=("{\"name\":\"$PWD/$f\",\"lines\":[$(IFS=,; echo "${json_ranges[*]}")]}")
done
filter="[$(IFS=,; echo "${entries[*]}")]"

if [[ ${#format_failed[@]} -gt 0 ]]; then
  echo "lint: clang-format: changed lines need formatting in ${#format_failed[@]} files; to fix them:" >&2
  echo "  git diff -U0 --no-color $base -- ${format_failed[*]} | clang-format-diff -p1 -i" >&2
  status=1
fi

db="$build/compile_commands.json"
if [[ ! -f "$db" ]]; then
  echo "lint: $db not found: build the test configuration first (make build-test)" >&2
  exit 1
fi
mapfile -t tidy_files < <(for f in "${checked[@]}"; do
  [[ "$f" == *.cpp || "$f" == *.cc || "$f" == *.c ]] && grep -qF "\"file\": \"$PWD/$f\"" "$db" && echo "$f"
done || true)
echo "lint: clang-tidy on ${#tidy_files[@]} of them (the .cpp files in $db), $jobs at a time"
if [[ ${#tidy_files[@]} -gt 0 ]]; then
  export clang_tidy build filter
  # Each file's findings are printed together, and only when it has some.
  if ! printf '%s\0' "${tidy_files[@]}" | xargs -0 -n 1 -P "$jobs" bash -c '
      out=$("$clang_tidy" -p "$build" --quiet --extra-arg=-Wno-unknown-warning-option --extra-arg=-Wno-error \
            --line-filter="$filter" "$1" 2>&1) && exit 0
      printf "%s\n" "$out" | grep -v "^[0-9]* warnings\? \(and [0-9]* errors\? \)\?generated\.$" >&2
      exit 1' lint-tidy; then
    echo "lint: clang-tidy reported findings (above)" >&2
    status=1
  fi
fi
if [[ $status -eq 0 ]]; then echo "lint: clean"; fi
exit $status
