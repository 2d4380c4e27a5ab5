"""arkfs: browse and read ARK-named archives stored in XET content-addressed storage."""

__version__ = "0.1.0"
