"""Speed and NFE ratios against peers measured in the same run
(``python -m benchmarks.bench_<area>``)."""
