"""array_record's `array_record_module`: `ArrayRecordWriter` and `ArrayRecordReader` (native).

Behaviour and exceptions follow array-record 0.8.6's C++ module: `ValueError` for a bad option
string, `IndexError` for `read()` past the end and for a bad `read(begin, end)`, `RuntimeError`
for everything else (I/O errors, damaged files, use after `close()`). A file that cannot be
opened does not make the constructor fail: `ok()` is `False` and reads raise `RuntimeError`.
The reader also reads objects by URL (`s3://`, `gs://`, `az://`, `http(s)://`); the writer
writes local files only.
"""

from riegeli._riegeli import ArrayRecordReader
from riegeli._riegeli import ArrayRecordWriter

__all__ = ('ArrayRecordReader', 'ArrayRecordWriter')
