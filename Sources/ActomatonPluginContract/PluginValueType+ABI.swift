import ActomatonPluginABI
import CFFI

extension PluginValueType {
    /// libffi's descriptor of the C type.
    public var ffiType: UnsafeMutablePointer<ffi_type> {
        switch self {
        case .bool: cffi_type_uint8()
        case .int8: cffi_type_sint8()
        case .int16: cffi_type_sint16()
        case .int32: cffi_type_sint32()
        case .int64: cffi_type_sint64()
        case .uint8: cffi_type_uint8()
        case .uint16: cffi_type_uint16()
        case .uint32: cffi_type_uint32()
        case .uint64: cffi_type_uint64()
        case .float: cffi_type_float()
        case .double: cffi_type_double()
        case .string: cffi_type_pointer()
        }
    }

    /// The type a C `actomaton_type` names, or `nil` for an unknown value.
    public init?(abiType: actomaton_type) {
        self.init(rawValue: abiType)
    }

    /// The C value of the type (`ACTOMATON_TYPE_*`).
    public var abiType: actomaton_type { rawValue }
}
