set terminal pngcairo size 1000,560 noenhanced
set output "bench/results/2026-11-29-issue34-10m-compare/before/seed-throughput.png"
set title "seed: commands per second"
set xlabel "seconds since start"
set ylabel "commands/s"
set grid
set yrange [0:*]
plot "bench/results/2026-11-29-issue34-10m-compare/before/seed-throughput.dat" using 1:2 with lines lw 2 title "published (acked by Kafka)", "bench/results/2026-11-29-issue34-10m-compare/before/seed-throughput.dat" using 1:3 with lines lw 2 title "applied by belfry"
