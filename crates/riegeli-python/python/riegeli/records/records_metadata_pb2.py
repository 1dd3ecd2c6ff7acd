"""RecordsMetadata, the message of a file's metadata chunk (riegeli/records/records_metadata.proto).

The message class is built at import from a FileDescriptorProto equal on the wire to Google's
records_metadata.proto, so no protoc-generated code is needed and any protobuf runtime works.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2
from google.protobuf import descriptor_pool
from google.protobuf import message_factory

__all__ = ('RecordsMetadata', 'DESCRIPTOR')

_FILE_NAME = 'riegeli/records/records_metadata.proto'
_MAX_FIELD_NUMBER = (1 << 29) - 1


def _file_descriptor_proto() -> descriptor_pb2.FileDescriptorProto:
    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name=_FILE_NAME,
        package='riegeli',
        syntax='proto2',
        dependency=['google/protobuf/descriptor.proto'],
    )
    message = proto.message_type.add(name='RecordsMetadata')
    optional = field.LABEL_OPTIONAL
    message.field.add(name='file_comment', number=1, type=field.TYPE_STRING, label=optional)
    message.field.add(name='record_type_name', number=2, type=field.TYPE_STRING, label=optional)
    message.field.add(
        name='file_descriptor',
        number=3,
        type=field.TYPE_MESSAGE,
        label=field.LABEL_REPEATED,
        type_name='.google.protobuf.FileDescriptorProto',
    )
    message.field.add(name='record_writer_options', number=4, type=field.TYPE_STRING, label=optional)
    message.field.add(name='num_records', number=5, type=field.TYPE_INT64, label=optional)
    message.extension_range.add(start=1000, end=_MAX_FIELD_NUMBER + 1)
    return proto


def _message_class(descriptor):
    get_message_class = getattr(message_factory, 'GetMessageClass', None)
    if get_message_class is not None:
        return get_message_class(descriptor)
    return message_factory.MessageFactory(descriptor.file.pool).GetPrototype(descriptor)  # protobuf < 4.22


_pool = descriptor_pool.Default()
try:
    DESCRIPTOR = _pool.FindFileByName(_FILE_NAME)
except KeyError:
    _pool.AddSerializedFile(_file_descriptor_proto().SerializeToString())
    DESCRIPTOR = _pool.FindFileByName(_FILE_NAME)

RecordsMetadata = _message_class(DESCRIPTOR.message_types_by_name['RecordsMetadata'])
