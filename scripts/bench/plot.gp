# plot.gp - PNGs from a scripts/bench/compare results dir.
#
#   gnuplot -e "dir='build/bench'" scripts/bench/plot.gp
#   (compare runs it itself when gnuplot is installed; optional variables
#    stall_from and stall_to, in seconds, shade the disk stall)
#
# Makes, in dir:
#   storm-latency.png   writer latency over time during the one-key storm,
#                       Redis and hotkvd (round 1 of each)
#   storm-pinned-latency.png  the same with the load generator and the
#                       server pinned to different CPUs (when it ran)
#   stall-latency.png   the same during the disk stall (when it ran)
#   pipeline.png        GET/SET throughput vs pipeline depth (64 B values)
#
# Input: storm-<server>-r1.log and stall-<server>-r1.log from storm
# --latency-log ("t_s latency_us status"; a write never answered has
# latency -1 and is left out), and pipeline.dat written by compare.

if (!exists("dir")) dir = "build/bench"
set terminal pngcairo size 1100,520 font "sans,10" noenhanced
set grid
set key top right opaque

ok(lat) = lat >= 0 ? lat / 1000.0 : 1/0
have(f) = system("test -s '" . f . "' && echo 1 || echo 0") + 0

# ---- writer latency during the storm -------------------------------------------------
set output dir . "/storm-latency.png"
set title "Writer latency during the storm (200 readers on one key, one SET every 10 ms)"
set xlabel "time since start (s)"
set ylabel "SET latency (ms, log scale)"
set logscale y
r = dir . "/storm-redis-r1.log"
h = dir . "/storm-hotkvd-r1.log"
if (have(r) && have(h)) {
    plot r using 1:(ok($2)) with points pt 7 ps 0.4 lc rgb "#c0392b" title "redis-server (AOF everysec)", \
         h using 1:(ok($2)) with points pt 7 ps 0.4 lc rgb "#2471a3" title "hotkvd (ledger class)"
} else { if (have(h)) {
    plot h using 1:(ok($2)) with points pt 7 ps 0.4 lc rgb "#2471a3" title "hotkvd (ledger class)"
} }

# ---- the same, pinned ------------------------------------------------------------------
r = dir . "/storm-pinned-redis-r1.log"
h = dir . "/storm-pinned-hotkvd-r1.log"
if (have(r) && have(h)) {
    set output dir . "/storm-pinned-latency.png"
    set title "Writer latency during the storm, load generator on one CPU, server on the other (taskset)"
    plot r using 1:(ok($2)) with points pt 7 ps 0.4 lc rgb "#c0392b" title "redis-server (AOF everysec)", \
         h using 1:(ok($2)) with points pt 7 ps 0.4 lc rgb "#2471a3" title "hotkvd (ledger class)"
}

# ---- writer latency during the disk stall -------------------------------------------
r = dir . "/stall-redis-r1.log"
h = dir . "/stall-hotkvd-r1.log"
if (have(h)) {
    set output dir . "/stall-latency.png"
    set title "Writer latency while fsync/fdatasync/pwrite are blocked (LD_PRELOAD stallfs)"
    if (exists("stall_from") && exists("stall_to")) {
        set object 1 rect from stall_from, graph 0 to stall_to, graph 1 fc rgb "#f5e6a8" fs solid 0.5 noborder behind
        set label 1 "disk stalled" at stall_from, graph 0.04 offset 1,0
    }
    if (have(r)) {
        plot r using 1:(ok($2)) with points pt 7 ps 0.4 lc rgb "#c0392b" title "redis-server (AOF everysec)", \
             h using 1:(ok($2)) with points pt 7 ps 0.4 lc rgb "#2471a3" title "hotkvd (ledger class)"
    } else {
        plot h using 1:(ok($2)) with points pt 7 ps 0.4 lc rgb "#2471a3" title "hotkvd (ledger class)"
    }
    unset object 1
    unset label 1
}

# ---- throughput vs pipeline depth ----------------------------------------------------
p = dir . "/pipeline.dat"
if (have(p)) {
    set output dir . "/pipeline.png"
    set title "redis-benchmark throughput vs pipeline depth (-c 50, 64 B values, medians)"
    set xlabel "pipeline depth (-P)"
    set ylabel "requests/s"
    unset logscale y
    set logscale x 2
    set xrange [0.8:20]
    set xtics (1, 16)
    set yrange [0:*]
    plot p using 1:2 with linespoints pt 7 lc rgb "#c0392b" title "redis GET", \
         p using 1:3 with linespoints pt 7 lc rgb "#2471a3" title "hotkvd GET", \
         p using 1:4 with linespoints pt 5 dt 2 lc rgb "#c0392b" title "redis SET (AOF everysec)", \
         p using 1:5 with linespoints pt 5 dt 2 lc rgb "#2471a3" title "hotkvd SET (ledger)"
}
