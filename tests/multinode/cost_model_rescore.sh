#!/usr/bin/env bash
# Judges a grid that cost_model.sh measured (its --out table) with the model as it is now: for
# every cell, spmd-sim's choice for the cell's links, and that algorithm's forced row in the
# table against the best forced row (the same "judged by its choice" count as cost_model.sh's),
# and spmd-sim's prediction for every forced row against its measurement. No job runs, so a
# change to the model is weighed against every measured cell in a second, before a new grid.
#
# Usage: cost_model_rescore.sh BIN_DIR TABLE.md LABEL=SPMD_NET... [--changes]
#   LABEL: a rate column of the table (1gbit, 1gbit+2ms, ...), the rows judged; SPMD_NET: the
#   links its run measured (cost_model.sh prints them: "== links LABEL: measured SPMD_NET=...",
#   and the shared cores its predictions add: append ",cores=N@TIME"). The choices are the
#   model's with the links alone, as the jobs' (cores=... prices the predictions only; but
#   --choose-with-cores).
#   --changes: also list the cells whose choice differs from the table's default
#   --rows: also print every forced row with the new prediction and its error
#   --loop: predict calls back to back (spmd-sim --loop), as the grid times them without --sync
#   --choose-with-cores: the choices are the model's with the shared cores too (SPMD_NET whole)
#   --section TEXT: only the table under the first heading that holds TEXT (up to the next
#   heading), e.g. --section "1 Gbit/s, pinned (2026-11-30 11:40)" in docs/cost_model_grid.md
# A hier row was measured with the phase among hosts that the model chose then: where the
# model now chooses another, that row no longer says what hier would take.
set -uo pipefail
usage() { sed -n '8,21p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
(($# >= 3)) || usage
bin_dir=$1 table=$2
shift 2
[[ -x $bin_dir/spmd-sim ]] || { echo "cost_model_rescore.sh: no spmd-sim in $bin_dir (make build first)"; exit 2; }
[[ -r $table ]] || { echo "cost_model_rescore.sh: cannot read $table"; exit 2; }
changes=0 show_rows=0 loop=() section="" with_cores=0
declare -A nets
while (($#)); do
  case $1 in
    --changes) changes=1 ;;
    --rows) show_rows=1 ;;
    --loop) loop=(--loop) ;;
    --choose-with-cores) with_cores=1 ;;
    --section) (($# >= 2)) || usage; section=$2; shift ;;
    *=*) nets[${1%%=*}]=${1#*=} ;;
    *) usage ;;
  esac
  shift
done
text=$(cat "$table")
if [[ -n $section ]]; then
  text=$(awk -v s="$section" '/^#/ { if (inside) exit; if (index($0, s)) inside = 1; next } inside' <<<"$text")
  [[ -n $text ]] || { echo "cost_model_rescore.sh: no heading with '$section' in $table"; exit 2; }
fi

# "label layout coll algo size us" for every forced row (not default or measured)
rows=$(awk -F'|' 'NF > 8 && $6 ~ /[0-9]/ { for (i = 2; i <= 9; ++i) gsub(/^ +| +$/, "", $i)
  if ($5 !~ /^(default|measured)/) print $2, $3, $4, $5, $6, $7
  else if ($5 ~ /^default/) { c = $5; sub(/^default \(/, "", c); sub(/\)$/, "", c); sub(/ -> .*/, "", c); print $2, $3, $4, "TABLE_CHOICE", $6, c } }' <<<"$text")
[[ -n $rows ]] || { echo "cost_model_rescore.sh: no rows in $table"; exit 2; }
# Only the labels given are judged (docs/cost_model_grid.md holds several runs, one label each).
rows=$(awk -v labels="${!nets[*]}" 'BEGIN { n = split(labels, l, " "); for (i = 1; i <= n; ++i) keep[l[i]] = 1 } $1 in keep' <<<"$rows")
[[ -n $rows ]] || { echo "cost_model_rescore.sh: no rows of ${!nets[*]} in $table (its labels: $(awk -F'|' 'NF > 8 && $6 ~ /[0-9]/ { gsub(/ /, "", $2); print $2 }' <<<"$text" | sort -u | paste -sd' '))"; exit 2; }

# spmd-sim's rows for every (label, layout, collective) of the table: "label layout coll algo size SIM us chosen"
# (the prediction with the cores given, the choice without them)
sims=$(cut -d' ' -f1-3 <<<"$rows" | sort -u | while read -r label layout coll; do
  sizes=$(awk -v l="$label" -v y="$layout" -v c="$coll" '$1 == l && $2 == y && $3 == c { print $5 }' <<<"$rows" | sort -un | paste -sd,)
  shape=(-c "$coll" --nodes "${layout%x*}" --ranks-per-node "${layout#*x}" -s "$sizes" --csv)
  links=${nets[$label]}
  ((with_cores)) || links=$(sed -E 's/(^|,)cores=[^,]*//' <<<"$links")
  awk -F, -v l="$label" -v y="$layout" -v c="$coll" 'NR == FNR { chosen[$3, $4] = $6; next }
    FNR > 1 { print l, y, c, $4, $3, "SIM", $5, chosen[$3, $4] }' \
    <("$bin_dir/spmd-sim" "${shape[@]}" --net "$links") <("$bin_dir/spmd-sim" "${shape[@]}" "${loop[@]}" --net "${nets[$label]}")
done)

awk -v changes="$changes" -v show_rows="$show_rows" '
  $6 == "SIM" { k = $1 " " $2 " " $3 " " $5; pred[k, $4] = $7; if ($8 == 1) choice[k] = $4; next }
  $4 == "TABLE_CHOICE" { old[$1 " " $2 " " $3 " " $5] = $6; next }
  { k = $1 " " $2 " " $3 " " $5; t[k, $4] = $6; algos[k] = algos[k] " " $4; big[k] = $5 >= 1048576 - 64
    if (!(k in best) || $6 < best[k]) { best[k] = $6; best_algo[k] = $4 } }
  END {
    for (k in best) {
      part = big[k] ? "from 1 MiB" : "below 1 MiB"; n[part]++
      split(algos[k], a, " ")
      for (i in a) if ((k SUBSEP a[i]) in pred) { np[part]++; e = (pred[k, a[i]] - t[k, a[i]]) / t[k, a[i]]; if (e <= 0.25 && e >= -0.25) okp[part]++
        if (show_rows) printf "row %s %s: measured %.1f us, predicted %.1f us, %+.0f%%\n", k, a[i], t[k, a[i]], pred[k, a[i]], 100 * e }
      c = choice[k]
      if (!((k SUBSEP c) in t)) { unjudged[part]++; continue }  # e.g. hier chosen on 1 rank per host, not forced there
      r = t[k, c] / best[k]; judged[part]++; if (r <= 1.10) w10[part]++; if (r <= 1.5) w15[part]++
      if (r > worst[part]) { worst[part] = r; worst_cell[part] = k ": " c " " t[k, c] " us, best " best_algo[k] " " best[k] " us" }
      if (changes && (k in old) && old[k] != c && ((k SUBSEP old[k]) in t))
        printf "changed %s: %s (%.2fx) -> %s (%.2fx)\n", k, old[k], t[k, old[k]] / best[k], c, r
    }
    for (p in n)
      printf "%s: the choice within 10%% of the best forced in %d of %d cells, within 1.5x %d, worst %.2fx (%s)%s; predictions within 25%%: %d of %d\n",
        p, w10[p], judged[p], w15[p], worst[p], worst_cell[p], unjudged[p] ? sprintf("; %d cells chose an algorithm not forced there", unjudged[p]) : "", okp[p], np[p]
  }' <<<"$sims"$'\n'"$rows"
