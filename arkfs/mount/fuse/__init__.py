"""The FUSE side of the mount: the pyfuse3 handlers, open handles, attributes, extended
attributes, page offers to the kernel, and EROFS for every write.
"""
