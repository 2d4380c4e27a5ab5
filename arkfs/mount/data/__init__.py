"""The verified data path: file maps, chunk and object loaders, the disk chunk cache and its
eviction policy, the write backlog, prefetch and worker jobs, behind the reader facade.
"""
