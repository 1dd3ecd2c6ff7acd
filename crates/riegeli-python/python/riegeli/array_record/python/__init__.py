"""The layout of array_record's package: `array_record.python.X` is `riegeli.array_record.python.X`."""

from riegeli.array_record import array_record_data_source
from riegeli.array_record import array_record_module

__all__ = ('array_record_data_source', 'array_record_module')
