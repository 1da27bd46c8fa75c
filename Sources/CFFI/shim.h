// The one place that includes libffi's headers. Swift code imports `CFFI` instead.
//
// libffi (Debian: libffi-dev) is what lets the plugin host call a C function whose
// signature it only learns at run time, and hand plugins C function pointers bound to
// per-instance data (closures).
#ifndef ACTOMATON_CFFI_SHIM_H
#define ACTOMATON_CFFI_SHIM_H

#include <ffi.h>
#include <stddef.h>

// Stable addresses of libffi's global type descriptors. Swift imports `ffi_type_sint64` and
// friends as mutable globals: `&ffi_type_sint64` would be a temporary inout conversion, and
// Swift 6 flags the access as shared mutable state. These return the real C address.
static inline ffi_type *cffi_type_void(void)    { return &ffi_type_void; }
static inline ffi_type *cffi_type_uint8(void)   { return &ffi_type_uint8; }
static inline ffi_type *cffi_type_sint8(void)   { return &ffi_type_sint8; }
static inline ffi_type *cffi_type_uint16(void)  { return &ffi_type_uint16; }
static inline ffi_type *cffi_type_sint16(void)  { return &ffi_type_sint16; }
static inline ffi_type *cffi_type_uint32(void)  { return &ffi_type_uint32; }
static inline ffi_type *cffi_type_sint32(void)  { return &ffi_type_sint32; }
static inline ffi_type *cffi_type_uint64(void)  { return &ffi_type_uint64; }
static inline ffi_type *cffi_type_sint64(void)  { return &ffi_type_sint64; }
static inline ffi_type *cffi_type_float(void)   { return &ffi_type_float; }
static inline ffi_type *cffi_type_double(void)  { return &ffi_type_double; }
static inline ffi_type *cffi_type_pointer(void) { return &ffi_type_pointer; }

// FFI_DEFAULT_ABI is an enum constant from ffitarget.h; exposed plainly.
static inline ffi_abi cffi_default_abi(void) { return FFI_DEFAULT_ABI; }

// sizeof(ffi_closure) as C sees it (the struct has a trampoline union and alignment attributes).
static inline size_t cffi_closure_size(void) { return sizeof(ffi_closure); }

#endif
