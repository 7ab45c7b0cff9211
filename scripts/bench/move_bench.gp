# move_bench.gp - the plot of one scripts/bench/move_bench size:
#
#   gnuplot -e "dir='build/bench-move'; tag='128M'; move_at=10; copy_at=10.1; \
#               fence_at=12; commit_at=12.01; span=20" scripts/bench/move_bench.gp
#   (move_bench runs it itself when gnuplot is installed)
#
# Makes dir/move-TAG.png: each write's latency (ms, log scale) against the
# time it was sent, failed writes as red crosses, the copy shaded blue, the
# fence (writes wait; drawn at least 1/250 of the time axis wide) red, and
# on the right axis each owner's CPU (fraction of one core, last second).
# Input: dir/move-TAG.log ("t_s latency_us ok") and dir/move-TAG-cpu.dat
# ("t_s owner1 owner2").

if (!exists("dir")) dir = "build/bench-move"
if (!exists("tag")) tag = "128M"
set terminal pngcairo size 1100,520 font "sans,10" noenhanced
set output dir . "/move-" . tag . ".png"
if (!exists("rate")) rate = "2000"
set title "Leaf of " . tag . " moving from owner 1 to owner 2 under " . rate . " SET/s of 1 KiB"
set grid
set key top left opaque
set xlabel "time since the writers started (s)"
set ylabel "SET latency (ms, log scale)"
set logscale y
set yrange [0.05:*]
set y2label "owner CPU (fraction of one core)"
set y2range [0:1.2]
set y2tics 0.2
set ytics nomirror

lg = dir . "/move-" . tag . ".log"
cpu = dir . "/move-" . tag . "-cpu.dat"
if (exists("copy_at") && exists("fence_at")) {
    set object 1 rect from copy_at, graph 0 to fence_at, graph 1 fc rgb "#d6e6f5" fs solid 0.6 noborder behind
    set label 1 "copy" at copy_at, graph 0.96 offset 0.5,0
}
if (exists("fence_at") && exists("commit_at")) {
    # a few pixels wide at least: the fence is milliseconds on a scale of a minute
    w = commit_at - fence_at
    wmin = exists("span") ? span / 250.0 : 0.05
    set object 2 rect from fence_at, graph 0 to fence_at + (w > wmin ? w : wmin), graph 1 fc rgb "#e74c3c" fs solid 0.6 noborder front
    set label 2 "fence + commit" at commit_at, graph 0.90 offset 0.5,0
}
if (exists("move_at")) {
    set arrow 1 from move_at, graph 0 to move_at, graph 1 nohead lc rgb "#555555" dt 2
    set label 3 "leaf move asked" at move_at, graph 0.76 offset 0.5,0
}

plot lg using 1:($3 == 1 ? $2 / 1000.0 : 1/0) with points pt 7 ps 0.25 lc rgb "#2471a3" title "SET (ok)", \
     lg using 1:($3 == 0 ? $2 / 1000.0 : 1/0) with points pt 2 ps 1.0 lc rgb "#c0392b" title "SET failed", \
     cpu using 1:2 axes x1y2 with lines lw 1.5 lc rgb "#117a65" title "owner 1 CPU", \
     cpu using 1:3 axes x1y2 with lines lw 1.5 lc rgb "#b9770e" title "owner 2 CPU"
