#!/usr/bin/env bash
# spmdrun's man page and bash completion, made from `spmdrun --help` by scripts/spmdrun-docs.sh:
# the page renders (man -l, else groff, else only its header is checked) and names every flag
# of --help, and the completion offers flags, the values of flags with a fixed set, and files
# after the program.
#   docs_test.sh SPMDRUN DOCS_SCRIPT
set -euo pipefail
spmdrun=$1 docs=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "docs_test: $*" >&2; exit 1; }

bash "$docs" "$spmdrun" "$tmp"
page=$tmp/spmdrun.1 completion=$tmp/spmdrun.bash-completion
head -1 "$page" | grep -q '^\.TH SPMDRUN 1 ' || fail "spmdrun.1 does not start with .TH SPMDRUN 1: $(head -1 "$page")"
for section in NAME SYNOPSIS DESCRIPTION OPTIONS ENVIRONMENT '"EXIT STATUS"' '"SEE ALSO"'; do
  grep -qx "\.SH $section" "$page" || fail "spmdrun.1 has no section $section"
done

# Every spelling of every option entry of --help ("  -r, --redirects V"), in both files.
flags=$("$spmdrun" --help | grep -E '^  -' | sed -E 's/^  //; s/  .*//; s/, /\n/g' | sed -E 's/[ [].*//')
[[ $(wc -w <<<"$flags") -ge 30 ]] || fail "found only these flags in --help: $flags"
for f in $flags; do
  grep -qF -- "\\fB${f//-/\\-}\\fR" "$page" || fail "spmdrun.1 does not list $f"
  grep -qE -- "^_spmdrun_flags='(.* )?$f( .*)?'$" "$completion" || fail "the completion does not offer $f"
done

# It renders, without warnings where groff can say so.
if command -v groff >/dev/null; then
  warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
  [[ -z $warnings ]] || fail "groff warns about spmdrun.1: $warnings"
fi
if command -v man >/dev/null; then
  text=$(MANWIDTH=100 MANPAGER=cat PAGER=cat man -l "$page" 2>/dev/null) || fail "man -l spmdrun.1 failed"
  for want in "--nproc-per-node" "SPMD_DEBUG" "EXIT STATUS" "127" "126" "--local-rank-arg"; do
    grep -qF -- "$want" <<<"$text" || fail "man -l spmdrun.1 shows no '$want'"
  done
elif command -v groff >/dev/null; then
  groff -man -Tutf8 "$page" | grep -q 'nproc' || fail "groff renders no --nproc-per-node"
else
  echo "docs_test: neither man nor groff here: checked the page's header and flags only"
fi

# The completion function, called as bash would (COMP_WORDS, COMP_CWORD), from a folder that
# holds one file.
mkdir "$tmp/cwd" && touch "$tmp/cwd/train.py"
cd "$tmp/cwd"
# complete WORD...: what _spmdrun offers for the last word, one line.
got=$(bash -c '
  source "$1"; shift
  complete -p spmdrun >/dev/null || { echo "not registered"; exit; }
  for line in "$@"; do
    read -ra COMP_WORDS <<<"$line"
    [[ $line == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    _spmdrun
    echo "$line|${COMPREPLY[*]}"
  done' _ "$completion" \
  "spmdrun --nproc" "spmdrun --nproc_" "spmdrun --nproc-per-node " "spmdrun --rdzv-backend " \
  "spmdrun -t " "spmdrun --local-rank-arg=" "spmdrun --nnodes 2 tr" "spmdrun ./train.py --lr 1 t" \
  "spmdrun --hostfile tr")
expect() {
  grep -qxF -- "$1|$2" <<<"$got" || fail "completing '$1' gave '$(grep -F -- "$1|" <<<"$got" | cut -d'|' -f2-)', not '$2'"
}
expect "spmdrun --nproc" "--nproc-per-node"
expect "spmdrun --nproc_" "--nproc_per_node"
expect "spmdrun --nproc-per-node " "gpu auto cpu"
expect "spmdrun --rdzv-backend " "static c10d etcd"
expect "spmdrun -t " "0 1 2 3"
expect "spmdrun --local-rank-arg=" "local_rank local-rank"
expect "spmdrun ./train.py --lr 1 t" "train.py"
expect "spmdrun --hostfile tr" "train.py"
grep -F -- "spmdrun --nnodes 2 tr|" <<<"$got" | grep -qw train.py || fail "the program slot does not offer train.py: $got"
echo "docs_test: spmdrun.1 renders and lists $(wc -w <<<"$flags") flags; the completion offers flags, values and files"
