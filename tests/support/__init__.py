"""Helpers the tests share: real servers and peers, never fakes of arkfs components."""
