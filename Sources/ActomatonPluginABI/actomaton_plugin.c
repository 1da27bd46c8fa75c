// The plugin contract is the header; this file holds its one helper and pins its layout.
#include "actomaton_plugin.h"

// The layout every language binding relies on (x86_64 and arm64 Linux, LP64).
_Static_assert(sizeof(actomaton_value) == 16, "actomaton_value is 16 bytes");
_Static_assert(offsetof(actomaton_value, as) == 8, "actomaton_value.as is at offset 8");
_Static_assert(offsetof(actomaton_manifest, abi_version) == 0, "abi_version is the manifest's first field");

const char *actomaton_type_name(actomaton_type type) {
    switch (type) {
    case ACTOMATON_TYPE_BOOL: return "bool";
    case ACTOMATON_TYPE_INT8: return "int8";
    case ACTOMATON_TYPE_INT16: return "int16";
    case ACTOMATON_TYPE_INT32: return "int32";
    case ACTOMATON_TYPE_INT64: return "int64";
    case ACTOMATON_TYPE_UINT8: return "uint8";
    case ACTOMATON_TYPE_UINT16: return "uint16";
    case ACTOMATON_TYPE_UINT32: return "uint32";
    case ACTOMATON_TYPE_UINT64: return "uint64";
    case ACTOMATON_TYPE_FLOAT: return "float";
    case ACTOMATON_TYPE_DOUBLE: return "double";
    case ACTOMATON_TYPE_STRING: return "string";
    default: return 0;
    }
}
