"""The names of the mount: which archive and entry a path is (namespace, catalog,
discovery, latest version, archive versions cached on disk). Never imports the data path.
"""
