"""Reads records from a Riegeli/records file."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from google.protobuf import descriptor_pool
from google.protobuf import message_factory
from google.protobuf.message import Message

from riegeli._riegeli import EXISTENCE_ONLY
from riegeli._riegeli import RecordReader
from riegeli._riegeli import byte_ranges

if TYPE_CHECKING:
    from riegeli.records.records_metadata_pb2 import RecordsMetadata

__all__ = ('EXISTENCE_ONLY', 'get_record_type', 'RecordReader', 'byte_ranges')


def get_record_type(metadata: RecordsMetadata) -> Optional[type[Message]]:
    """Interprets record_type_name and file_descriptor from metadata.

    Args:
      metadata: Riegeli/records file metadata, typically returned by
        RecordReader.read_metadata().

    Returns:
      A message class of the type of the records, or None if metadata does not say it.
    """
    if not metadata.record_type_name or not metadata.file_descriptor:
        return None
    pool = descriptor_pool.DescriptorPool()
    for file_descriptor in metadata.file_descriptor:
        pool.Add(file_descriptor)
    descriptor = pool.FindMessageTypeByName(metadata.record_type_name)
    get_message_class = getattr(message_factory, 'GetMessageClass', None)
    if get_message_class is not None:
        return get_message_class(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)  # protobuf < 4.22
