"""What runs on a lent GPU machine: the paper-scale rows (:mod:`analysis.gpu.paper_rows`)."""
