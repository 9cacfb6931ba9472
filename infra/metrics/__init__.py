"""The metrics vocabulary: the series each tier is read from, the catalog of every metric name
with its source, the scaling signals' queries, and the panels and alerts built from them."""
