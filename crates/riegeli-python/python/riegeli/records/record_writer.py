"""Writes records to a Riegeli/records file."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from google.protobuf.descriptor import FileDescriptor
from google.protobuf.message import Message

from riegeli._riegeli import RecordWriter

if TYPE_CHECKING:
    from riegeli.records.records_metadata_pb2 import RecordsMetadata

__all__ = ('FlushType', 'set_record_type', 'RecordWriter')


class FlushType(enum.Enum):
    """The scope of objects to flush and the intended data durability.

    FROM_OBJECT:  data written so far becomes visible in other objects.
    FROM_PROCESS: data written so far becomes visible outside the process (the default).
    FROM_MACHINE: data written so far becomes visible outside the process and durable in
                  case of an operating system crash (the file is synced).
    """

    FROM_OBJECT = 0
    FROM_PROCESS = 1
    FROM_MACHINE = 2


def set_record_type(metadata: RecordsMetadata, message_type: type[Message]) -> None:
    """Sets record_type_name and file_descriptor in metadata.

    Args:
      metadata: Riegeli/records file metadata being filled, typically the metadata
        argument of RecordWriter().
      message_type: Promised type of records, typically the argument type of
        RecordWriter.write_message().
    """
    message_descriptor = message_type.DESCRIPTOR
    metadata.record_type_name = message_descriptor.full_name
    file_descriptors = metadata.file_descriptor
    del file_descriptors[:]
    seen: set[str] = set()

    def add_file(file_descriptor: FileDescriptor) -> None:
        # Each file after all its dependencies, each once.
        if file_descriptor.name in seen:
            return
        seen.add(file_descriptor.name)
        for dependency in file_descriptor.dependencies:
            add_file(dependency)
        file_descriptor.CopyToProto(file_descriptors.add())

    add_file(message_descriptor.file)
