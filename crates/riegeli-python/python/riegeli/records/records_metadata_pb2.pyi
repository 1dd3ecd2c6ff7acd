from collections.abc import Iterable
from typing import final

from google.protobuf import descriptor as _descriptor
from google.protobuf import descriptor_pb2 as _descriptor_pb2
from google.protobuf import message as _message
from google.protobuf.internal import containers as _containers

__all__ = ('RecordsMetadata', 'DESCRIPTOR')

DESCRIPTOR: _descriptor.FileDescriptor

@final
class RecordsMetadata(_message.Message):
    DESCRIPTOR: _descriptor.Descriptor
    file_comment: str
    record_type_name: str
    @property
    def file_descriptor(self) -> _containers.RepeatedCompositeFieldContainer[_descriptor_pb2.FileDescriptorProto]: ...
    record_writer_options: str
    num_records: int
    def __init__(
        self,
        *,
        file_comment: str | None = ...,
        record_type_name: str | None = ...,
        file_descriptor: Iterable[_descriptor_pb2.FileDescriptorProto] | None = ...,
        record_writer_options: str | None = ...,
        num_records: int | None = ...,
    ) -> None: ...
