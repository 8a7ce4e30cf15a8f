"""The byte layout of a project matrix file: a header, then fixed-size records, checked on read.

Header: a magic line and JSON (format, epoch, project, dimension, base version) padded to
HEADER_BYTES. Record: version (int64), seq (int64, negative for a deletion), int8 codes. A
snapshot's records all carry its base version; every later write appends records one version
higher, so a valid file's versions rise by at most one from record to record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["FORMAT", "HEADER_BYTES", "Change", "Matrix", "MatrixLayout"]

FORMAT = 1  # bump when the layout changes: older files then read as stale and are rebuilt
HEADER_BYTES = 512
_MAGIC = b"JIDOVEC\n"

Change = tuple[int, bytes | None]  # (seq, int8 codes), or (seq, None) for a deletion


@dataclass(frozen=True, slots=True)
class Matrix:
    """A project's embeddings at one version: seqs ascending, one row of int8 codes each."""

    stamp: tuple[str, int]  # (epoch, version): equal stamps hold equal rows
    seqs: npt.NDArray[np.int64]
    codes: npt.NDArray[np.int8]
    records: int = 0  # records in the file it came from (live, replaced and deleted ones)

    @property
    def nbytes(self) -> int:
        """Bytes of rows held (mapped from the file, or in memory)."""
        return int(self.seqs.nbytes + self.codes.nbytes)


class MatrixLayout:
    """Encodes and decodes the files of one dimension."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.record = np.dtype([("version", "<i8"), ("seq", "<i8"), ("code", "i1", (dim,))])

    def base(self, header: bytes, *, epoch: str, project: str) -> int | None:
        """The header's base version if it is a header of this epoch, project and layout."""
        if len(header) != HEADER_BYTES or not header.startswith(_MAGIC):
            return None
        try:
            meta = json.loads(header[len(_MAGIC):].rstrip(b" \n"))
        except ValueError:
            return None
        if not isinstance(meta, dict) or (meta.get("format"), meta.get("epoch"),
                                          meta.get("project"), meta.get("dim")) != (
                FORMAT, epoch, project, self.dim):
            return None
        base = meta.get("base")
        return base if isinstance(base, int) else None

    def unpack(self, rows: list[Change]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int8]]:
        """Seqs (negative for deletions) and codes (zeros for deletions) of changes."""
        seqs = np.array([s if c is not None else -s for s, c in rows], dtype=np.int64)
        codes = np.zeros((len(rows), self.dim), dtype=np.int8)
        for i, (_, code) in enumerate(rows):
            if code is not None:
                codes[i] = np.frombuffer(code, dtype=np.int8)
        return seqs, codes

    def pack(self, version: int, seqs: npt.NDArray[np.int64],
             codes: npt.NDArray[np.int8]) -> bytes:
        """Records of one version (to append)."""
        records = np.zeros(len(seqs), dtype=self.record)
        records["version"] = version
        records["seq"] = seqs
        records["code"] = codes
        return records.tobytes()

    def encode(self, version: int, seqs: npt.NDArray[np.int64], codes: npt.NDArray[np.int8], *,
               epoch: str, project: str) -> bytes:
        """A whole file: the header and the rows, all at `version`."""
        meta = {"format": FORMAT, "epoch": epoch, "project": project, "dim": self.dim,
                "base": version}
        header = _MAGIC + json.dumps(meta).encode()
        return header.ljust(HEADER_BYTES - 1) + b"\n" + self.pack(version, seqs, codes)

    def decode(self, data: bytes | memoryview, stamp: tuple[str, int], *, project: str,
               count: int | None) -> Matrix | None:
        """The matrix a file holds if it is whole and ends at `stamp`; else None."""
        base = self.base(bytes(data[:HEADER_BYTES]), epoch=stamp[0], project=project)
        if base is None or (len(data) - HEADER_BYTES) % self.record.itemsize:
            return None
        records = np.frombuffer(data, dtype=self.record, offset=HEADER_BYTES)
        if (int(records["version"][-1]) if len(records) else base) != stamp[1]:
            return None  # behind or ahead: known from the last record, before every page is read
        versions = np.concatenate(([base], records["version"]))
        steps = np.diff(versions)
        # Versions rise by one per write; a gap, a drop or another end means a lost write.
        if int(versions[-1]) != stamp[1] or (len(steps) and (steps.min() < 0 or steps.max() > 1)):
            return None
        seqs, codes = records["seq"], records["code"]  # views of the data: no copy
        if len(seqs) and (seqs.min() <= 0 or np.any(np.diff(seqs) <= 0)):
            # Replaced rows and deletions: keep each seq's last record, drop deleted ones.
            _, first = np.unique(np.abs(seqs[::-1]), return_index=True)
            last = len(seqs) - 1 - first
            keep = last[seqs[last] > 0]
            seqs, codes = seqs[keep], codes[keep]
        if count is not None and len(seqs) != count:
            return None
        return Matrix(stamp, seqs, codes, len(records))

    def last_version(self, header: bytes, tail: bytes, size: int, *, epoch: str,
                     project: str) -> int | None:
        """The version a file ends at, from its header, size and last record's first bytes."""
        base = self.base(header, epoch=epoch, project=project)
        if base is None or (size - HEADER_BYTES) % self.record.itemsize:
            return None
        if size == HEADER_BYTES:
            return base
        return int(np.frombuffer(tail[:8], dtype="<i8")[0]) if len(tail) >= 8 else None
