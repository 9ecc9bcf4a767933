"""The population archive: every run, individual, evaluation and checkpoint of a search.

The archive only stores; the engine decides. One SQLite file (WAL) per run
directory, code objects and assembly content-addressed beside it. A file that
is not an asmevo archive is an :class:`ArchiveError`, never a fresh start.
"""
from asmevo.archive.blobs import BlobStore
from asmevo.archive.store import SCHEMA_VERSION, Archive, ArchiveError

__all__ = ["Archive", "ArchiveError", "BlobStore", "SCHEMA_VERSION"]
