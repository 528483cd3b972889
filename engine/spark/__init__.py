"""The Spark boundary: the only engine package that imports pyspark."""
