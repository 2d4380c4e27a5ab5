"""Preservation packages of archives (BagIt), written without arkfs-specific formats."""
