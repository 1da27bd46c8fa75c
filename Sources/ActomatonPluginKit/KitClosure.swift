import CFFI

/// A prepared libffi call interface; owns the argument type array libffi points into.
final class KitCallInterface {
    let cif: UnsafeMutablePointer<ffi_cif>
    private let argumentTypes: UnsafeMutablePointer<UnsafeMutablePointer<ffi_type>?>

    init?(returning returnType: UnsafeMutablePointer<ffi_type>, arguments: [UnsafeMutablePointer<ffi_type>]) {
        cif = .allocate(capacity: 1)
        argumentTypes = .allocate(capacity: max(arguments.count, 1))
        for (index, type) in arguments.enumerated() { argumentTypes[index] = type }
        guard ffi_prep_cif(cif, cffi_default_abi(), UInt32(arguments.count), returnType, argumentTypes) == FFI_OK else {
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

/// A function pointer of a signature chosen at run time that calls `trampoline` with
/// `userData`: how the kit makes typed entry points without writing one C function per
/// signature. Lives as long as the export that made it (the library's life).
final class KitClosure {
    typealias Trampoline = @convention(c) (
        UnsafeMutablePointer<ffi_cif>?, UnsafeMutableRawPointer?,
        UnsafeMutablePointer<UnsafeMutableRawPointer?>?, UnsafeMutableRawPointer?
    ) -> Void

    let code: UnsafeMutableRawPointer
    private let closure: UnsafeMutableRawPointer
    private let interface: KitCallInterface

    init?(interface: KitCallInterface, userData: UnsafeMutableRawPointer?, trampoline: Trampoline) {
        var code: UnsafeMutableRawPointer?
        guard let closure = ffi_closure_alloc(cffi_closure_size(), &code), let code else { return nil }
        guard ffi_prep_closure_loc(closure.assumingMemoryBound(to: ffi_closure.self), interface.cif, trampoline, userData, code) == FFI_OK else {
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
