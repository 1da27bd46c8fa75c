// The one Swift wrapper over libffi's C API, shared by the plugin host (calls into plugins)
// and the plugin kit (typed entry points made at run time).
@_exported import CFFI

/// A libffi call interface (`ffi_cif`): how to call a C function of one signature, prepared
/// once and used for every call.
///
/// libffi keeps a pointer to the argument type array, so this object owns both and frees them
/// together. It is immutable after `init`; `ffi_call` only reads it, so it may be shared.
public final class CallInterface: @unchecked Sendable {
    /// The prepared interface.
    public let cif: UnsafeMutablePointer<ffi_cif>
    private let argumentTypes: UnsafeMutablePointer<UnsafeMutablePointer<ffi_type>?>

    /// Prepares the interface of a function returning `returnType` and taking `arguments`.
    /// Returns `nil` when libffi refuses the signature.
    public init?(returning returnType: UnsafeMutablePointer<ffi_type>, arguments: [UnsafeMutablePointer<ffi_type>]) {
        cif = .allocate(capacity: 1)
        argumentTypes = .allocate(capacity: max(arguments.count, 1))
        for (index, type) in arguments.enumerated() { argumentTypes[index] = type }
        let status = ffi_prep_cif(cif, cffi_default_abi(), UInt32(arguments.count), returnType, argumentTypes)
        guard status == FFI_OK else {
            cif.deallocate()
            argumentTypes.deallocate()
            return nil
        }
    }

    deinit {
        cif.deallocate()
        argumentTypes.deallocate()
    }
}

/// A C function pointer made at run time that, when called, runs `handler` with the
/// arguments (a libffi closure).
///
/// The closure's user data is an unretained pointer to this object: keep it alive for as long
/// as C may call ``code``. Freed in `deinit`.
public final class FFIClosure: @unchecked Sendable {
    /// The handler: `(return slot, argument pointers, user data)`.
    public typealias Trampoline = @convention(c) (
        UnsafeMutablePointer<ffi_cif>?, UnsafeMutableRawPointer?,
        UnsafeMutablePointer<UnsafeMutableRawPointer?>?, UnsafeMutableRawPointer?
    ) -> Void

    /// The executable address to hand to C as a function pointer.
    public let code: UnsafeMutableRawPointer
    private let closure: UnsafeMutableRawPointer
    private let interface: CallInterface

    /// Makes a function pointer of `interface`'s signature that calls `trampoline` with
    /// `userData`. Returns `nil` when libffi cannot allocate or prepare the closure.
    public init?(interface: CallInterface, trampoline: Trampoline, userData: UnsafeMutableRawPointer?) {
        var code: UnsafeMutableRawPointer?
        guard let closure = ffi_closure_alloc(cffi_closure_size(), &code), let code else { return nil }
        let status = ffi_prep_closure_loc(
            closure.assumingMemoryBound(to: ffi_closure.self), interface.cif, trampoline, userData, code)
        guard status == FFI_OK else {
            ffi_closure_free(closure)
            return nil
        }
        self.closure = closure
        self.code = code
        self.interface = interface
    }

    deinit {
        ffi_closure_free(closure)
    }
}
