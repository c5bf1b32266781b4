#!/bin/bash
# Best of several rounds of tools/weft-sim/validate.sh: one markdown table
# row per layout, rate, size and algorithm with the simulated time, the
# best (lowest) measured time of all rounds, their ratio and marks (s = the
# selector's choice, S = fastest simulated, M = fastest of the best
# measured; ties within 0.5% all marked), then a summary: rows from 1 MB within
# 15%, and per (layout, size) whether the fastest measured algorithm is one
# of the fastest simulated and the selector's choice.
#
#   tools/weft-sim/validate-best.sh ROUND1.log ROUND2.log ...
awk '
$1 ~ /^[0-9]+x[0-9]+$/ && $3 ~ /^[0-9]+$/ {
  k = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4
  if (!(k in sim)) { order[++n] = k; sim[k] = $5; sel[k] = ($8 ~ /s/) }
  if (!(k in best) || $6 < best[k]) best[k] = $6
  meas[k] = meas[k] (meas[k] == "" ? "" : ", ") $6
  c = $1 SUBSEP $2 SUBSEP $3
  if (!(c in fastsim) || $5 < fastsim[c]) fastsim[c] = $5
}
END {
  for (i = 1; i <= n; i++) {
    split(order[i], f, SUBSEP); c = f[1] SUBSEP f[2] SUBSEP f[3]
    if (!(c in fastmeas) || best[order[i]] < fastmeas[c]) fastmeas[c] = best[order[i]]
  }
  print "| layout | Mbit/s | size | algorithm | simulated ms | measured best ms (rounds) | sim / best | marks |"
  print "|---|---|---|---|---|---|---|---|"
  for (i = 1; i <= n; i++) {
    k = order[i]; split(k, f, SUBSEP); c = f[1] SUBSEP f[2] SUBSEP f[3]
    m = (sel[k] ? "s" : "") (sim[k] <= fastsim[c] * 1.005 ? "S" : "") (best[k] <= fastmeas[c] * 1.005 ? "M" : "")
    if (sel[k]) choice[c] = f[4]
    if (sim[k] <= fastsim[c] * 1.005) simfast[c] = simfast[c] " " f[4]
    if (best[k] <= fastmeas[c] * 1.005) measfast[c] = measfast[c] " " f[4]
    size = f[3] >= 1048576 ? f[3] / 1048576 " MB" : f[3] / 1024 " KB"
    r = sim[k] / best[k]
    printf "| %s | %s | %s | %s | %.1f | %.1f (%s) | %.2f | %s |\n", f[1], f[2], size, f[4], sim[k], best[k], meas[k], r, m
    if (f[3] >= 1048576) { big++; if (r >= 0.85 && r <= 1.15) within++ }
    if (!(c in seen)) { seen[c] = 1; cells[++nc] = c }
  }
  printf "\nrows from 1 MB within 15%%: %d of %d\n", within, big
  for (i = 1; i <= nc; i++) {
    c = cells[i]; split(c, f, SUBSEP)
    agree = 0
    nm = split(measfast[c], ms, " ")
    for (j = 1; j <= nm; j++) if (index(simfast[c] " ", " " ms[j] " ")) agree = 1
    printf "%s %s Mbit/s %s: fastest measured%s; fastest simulated%s (%s); selector %s (%s)\n", f[1], f[2], f[3],
      measfast[c], simfast[c], agree ? "agrees" : "differs", choice[c],
      index(measfast[c] " ", " " choice[c] " ") ? "agrees" : "differs"
  }
}' "$@"
