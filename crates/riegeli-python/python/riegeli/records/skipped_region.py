"""Details about a skipped region of invalid file contents."""

from __future__ import annotations

__all__ = ('SkippedRegion',)


class SkippedRegion:
    """Details about a skipped region of invalid file contents.

    Attributes:
      begin: File position of the beginning of the skipped region, inclusive.
      end: File position of the end of the skipped region, exclusive.
      length: Length of the skipped region, in bytes.
      message: Message explaining why the region is invalid.
    """

    __slots__ = ('begin', 'end', 'message')

    def __init__(self, begin: int, end: int, message: str) -> None:
        if begin > end:
            raise ValueError(f'Positions in the wrong order: {begin} > {end}')
        self.begin = begin
        self.end = end
        self.message = message

    @property
    def length(self) -> int:
        return self.end - self.begin

    def __str__(self) -> str:
        return f'[{self.begin}..{self.end}): {self.message}'

    def __repr__(self) -> str:
        return f'SkippedRegion({self.begin}, {self.end}, {self.message!r})'
