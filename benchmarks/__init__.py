"""Benchmarks of arkfs against hf_xet, local files and a trivial FUSE filesystem."""
