"""The layout of array_record's package: `array_record.python.X` is `riegeli.array_record.python.X`."""

import sys

from riegeli.array_record import array_record_data_source
from riegeli.array_record import array_record_module

__all__ = ('array_record_data_source', 'array_record_module')

# Submodules by these names too (`import riegeli.array_record.python.array_record_module`,
# `from riegeli.array_record.python.array_record_module import ArrayRecordReader`), as the
# same module objects.
sys.modules[f'{__name__}.array_record_data_source'] = array_record_data_source
sys.modules[f'{__name__}.array_record_module'] = array_record_module
