#!/usr/bin/env bash
# Makes spmdrun's man page (spmdrun.1) and bash completion (spmdrun.bash-completion) from the
# output of `spmdrun --help`, so that neither can fall behind the flags. The build runs it on
# the spmdrun it built (src/launcher/CMakeLists.txt) and `cmake --install` installs both
# (share/man/man1/spmdrun.1, share/bash-completion/completions/spmdrun). The help text's layout
# is the input format; src/launcher/help.cpp describes it. bash and POSIX awk only (mawk).
#
#   scripts/spmdrun-docs.sh SPMDRUN OUTDIR
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 SPMDRUN OUTDIR (writes OUTDIR/spmdrun.1 and OUTDIR/spmdrun.bash-completion)" >&2
  exit 2
fi
spmdrun=$1
out=$2
help=$("$spmdrun" --help) || { echo "$0: '$spmdrun --help' failed" >&2; exit 1; }
version=$("$spmdrun" --version | awk '{ print $NF }')
mkdir -p "$out"

# ---- the man page -------------------------------------------------------------------------
# Sections named here become top-level sections (.SH); the others are subsections (.SS) of
# OPTIONS, or of the top-level section before them ("Workers get" under ENVIRONMENT).
man_awk='
function esc(s) {
  gsub(/\\/, "\\\\e", s)
  gsub(/-/, "\\\\-", s)
  gsub(/\342\200\224/, "\\\\(em", s)  # an em dash (UTF-8): groff reads plain ASCII
  if (s ~ /^[.\047]/) s = "\\&" s
  return s
}
# "-r, --redirects 0|1|2|3|R:V,.." -> bold names, italic values.
function term_text(t,    n, parts, i, p, name, value, text, sp, br) {
  n = split(t, parts, /, /)
  text = ""
  for (i = 1; i <= n; i++) {
    p = parts[i]; sp = index(p, " "); br = index(p, "[")
    if (br && (!sp || br < sp)) { name = substr(p, 1, br - 1); value = substr(p, br) }  # --flag[=a|b]
    else if (sp) { name = substr(p, 1, sp - 1); value = " " substr(p, sp + 1) }
    else { name = p; value = "" }
    text = text (i > 1 ? ", " : "") "\\fB" esc(name) "\\fR"
    if (value != "") text = text (substr(value, 1, 1) == " " ? " " : "") "\\fI" esc(substr(value, substr(value, 1, 1) == " " ? 2 : 1)) "\\fR"
  }
  return text
}
function end_example() { if (in_example) { print ".fi"; print ".RE"; in_example = 0 } }
function top(name) {
  return name == "Environment" || name == "Failures" || name == "Exit status" || name == "Examples"
}
NR == 1 {
  sub(/^usage: /, "")
  print ".TH SPMDRUN 1 \"\" \"spmd " version "\" \"User Commands\""
  print ".SH NAME"
  print "spmdrun \\- start the processes of an SPMD job on one node or many (torchrun\047s counterpart)"
  print ".SH SYNOPSIS"
  cut = index($0, " ")
  print "\\fB" esc(substr($0, 1, cut - 1)) "\\fR " esc(substr($0, cut + 1))
  print ".SH DESCRIPTION"
  mode = "prose"
  next
}
/^$/ { end_example(); pending_pp = 1; next }
/^[^ ].*:$/ {
  end_example()
  section = substr($0, 1, length($0) - 1)
  if (top(section)) { print ".SH " (index(section, " ") ? "\"" toupper(section) "\"" : toupper(section)); opened_top = 1 }
  else {
    if (!opened_top && !opened_options) { print ".SH OPTIONS"; opened_options = 1 }
    print ".SS \"" section "\""
  }
  mode = "header"; pending_pp = 0
  next
}
section == "Examples" {
  if (!in_example) { print ".PP"; print ".RS 2"; print ".nf"; in_example = 1 }
  line = $0; sub(/^  /, "", line)
  print esc(line)
  next
}
/^    / {  # a continuation: more of the entry or paragraph above
  line = $0; sub(/^ +/, "", line)
  print esc(line)
  next
}
/^  [^ ]/ && (/^  -/ || /^  [^ ](.*[^ ])?  +[^ ]/) {  # an entry: TERM, two spaces, text
  line = substr($0, 3)
  gap = match(line, /  +/)
  print ".TP"
  if (gap) { print term_text(substr(line, 1, RSTART - 1)); print esc(substr(line, RSTART + RLENGTH)) }
  else print term_text(line)
  mode = "entry"; pending_pp = 0
  next
}
{  # prose
  line = $0; sub(/^ +/, "", line)
  if (mode != "prose" || pending_pp) print ".PP"
  print esc(line)
  mode = "prose"; pending_pp = 0
}
END {
  end_example()
  print ".SH \"SEE ALSO\""
  print "torchrun (\\fBpython3 \\-m torch.distributed.run \\-\\-help\\fR), whose flags and worker variables"
  print "spmdrun takes; \\fBsrun\\fR(1) and \\fBssh\\fR(1) for multi-node jobs; docs/launcher.md in spmd\047s"
  print "source tree for everything above in detail."
}'
printf '%s\n' "$help" | awk -v version="$version" "$man_awk" > "$out/spmdrun.1.tmp"
mv "$out/spmdrun.1.tmp" "$out/spmdrun.1"

# ---- the bash completion ------------------------------------------------------------------
# From each option entry: its spellings (torchrun's underscore ones too, as spmdrun takes
# them) and what its value is: "choices a b" (the lowercase alternatives of "a|b|N"),
# "optional a b" (--flag[=a|b]), file (FILE...), dir (DIR), cmd (CMD), any, or "" (a toggle).
flags_awk='
function add(name, kind,    u) {
  flags = flags " " name
  u = name
  if (u ~ /^--/) { u = substr(u, 3); gsub(/-/, "_", u); u = "--" u }
  under = under " " u
  if (kind == "") return
  cases = cases "    " name (u != name ? "|" u : "") ") echo \047" kind "\047 ;;\n"
}
function choices(meta,    n, alts, i, out) {
  n = split(meta, alts, /\|/)
  out = ""
  for (i = 1; i <= n; i++) if (alts[i] ~ /^[a-z0-9_-]+$/) out = out " " alts[i]
  return out
}
/^[^ ].*:$/ { section = $0; next }
section == "Environment:" || section == "Exit status:" || section == "Examples:" { next }
/^  -/ {
  line = substr($0, 3)
  if (match(line, /  +/)) line = substr(line, 1, RSTART - 1)
  n = split(line, names, /, /)
  # "-r, --redirects V": the value, written once at the end, belongs to every spelling.
  if (n > 1 && (cut = index(names[n], " "))) for (i = 1; i < n; i++) names[i] = names[i] substr(names[n], cut)
  for (i = 1; i <= n; i++) {
    p = names[i]
    if (index(p, "[=")) {
      meta = substr(p, index(p, "[=") + 2); sub(/\]$/, "", meta)
      add(substr(p, 1, index(p, "[=") - 1), "optional" choices(meta))
      continue
    }
    cut = index(p, " ")
    if (cut == 0) { add(p, ""); continue }
    meta = substr(p, cut + 1); name = substr(p, 1, cut - 1)
    if (index(meta, "|") && choices(meta) != "") kind = "choices" choices(meta)
    else if (meta ~ /^FILE/) kind = "file"
    else if (meta == "DIR") kind = "dir"
    else if (meta == "CMD") kind = "cmd"
    else kind = "any"
    add(name, kind)
  }
}
END {
  print "_spmdrun_flags=\047" substr(flags, 2) "\047"
  print "_spmdrun_flags_underscore=\047" substr(under, 2) "\047"
  print "# What follows a flag: \"\" (none: a toggle), \"optional A B\" (--flag=A), \"choices A B\","
  print "# file, dir, cmd (a command), or any (a value with nothing to offer)."
  print "_spmdrun_value() {"
  print "  case $1 in"
  printf "%s", cases
  print "    *) echo \047\047 ;;"
  print "  esac"
  print "}"
}'
{
  echo "# bash completion for spmdrun (spmd $version), generated from 'spmdrun --help' by"
  echo "# scripts/spmdrun-docs.sh: flags, the values of flags with a fixed set, files after them."
  printf '%s\n' "$help" | awk "$flags_awk"
  cat <<'EOF'

_spmdrun_reply() {  # COMMAND...: its output lines are the replies (file names may hold spaces)
  local out
  out=$("$@")
  local IFS=$'\n'
  COMPREPLY=($out)
}

_spmdrun_complete_value() {  # KIND WORD
  case $1 in
    choices\ * | optional\ *) _spmdrun_reply compgen -W "${1#* }" -- "$2" ;;
    file) compopt -o filenames 2>/dev/null; _spmdrun_reply compgen -f -- "$2" ;;
    dir) compopt -o filenames 2>/dev/null; _spmdrun_reply compgen -d -- "$2" ;;
    cmd) _spmdrun_reply compgen -c -- "$2" ;;
    *) COMPREPLY=() ;;
  esac
}

_spmdrun_program() {  # WORD: a command, or a file (a script, ./train)
  compopt -o filenames 2>/dev/null
  if [[ $1 == */* ]]; then _spmdrun_reply compgen -f -- "$1"
  else _spmdrun_reply compgen -c -f -- "$1"; fi
}

_spmdrun() {
  local words cword cur
  # Whole words as typed: COMP_WORDS splits "--tee=3" and "host:port" at = and :.
  if [[ -n ${COMP_LINE-} ]]; then
    local line=${COMP_LINE:0:COMP_POINT}
    read -ra words <<<"$line"
    if [[ -z $line || $line == *[[:space:]] ]]; then words+=(''); fi
    cword=$((${#words[@]} - 1))
  else
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  fi
  cur=${words[cword]-}
  # spmdrun's flags end at PROGRAM (the first word that is no flag or flag value, or after --);
  # what follows it is the program's own arguments: files.
  local i=1 w kind
  while ((i < cword)); do
    w=${words[i]}
    if [[ $w == -- ]]; then
      if ((i + 1 == cword)); then _spmdrun_program "$cur"; else _spmdrun_reply compgen -f -- "$cur"; fi
      return
    elif [[ $w == -* ]]; then
      kind=$(_spmdrun_value "${w%%=*}")
      [[ $w != *=* && -n $kind && $kind != optional* ]] && ((i++))
    else
      compopt -o filenames 2>/dev/null
      _spmdrun_reply compgen -f -- "$cur"
      return
    fi
    ((i++))
  done
  if ((i == cword + 1)); then  # the word is the value of the flag before it
    _spmdrun_complete_value "$(_spmdrun_value "${words[cword - 1]}")" "$cur"
    return
  fi
  if [[ $cur == --*=* ]]; then
    _spmdrun_complete_value "$(_spmdrun_value "${cur%%=*}")" "${cur#*=}"
    # Where = does not split words, the reply replaces the whole "--flag=value".
    if [[ $COMP_WORDBREAKS != *=* ]]; then COMPREPLY=("${COMPREPLY[@]/#/${cur%%=*}=}"); fi
    return
  fi
  if [[ $cur == -* ]]; then
    local list=$_spmdrun_flags
    [[ $cur == *_* ]] && list=$_spmdrun_flags_underscore
    _spmdrun_reply compgen -W "$list" -- "$cur"
    return
  fi
  _spmdrun_program "$cur"
}
complete -F _spmdrun spmdrun
EOF
} > "$out/spmdrun.bash-completion.tmp"
mv "$out/spmdrun.bash-completion.tmp" "$out/spmdrun.bash-completion"
