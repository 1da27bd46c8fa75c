;; A module of contract version 2 that names its active nodes, for the host's tests (wasm/build.sh
;; assembles it with wat2wasm). The manifest's bytes are spelled out in the data segments:
;; strings at 256, the parameter table at 288, the action table at 320, the manifest (52 bytes,
;; with the diagram "digraph { a }" and the active flag 1) at 512.
;; One action, set(value: int32), stores the state, the i32 at offset 0; what actomaton_active
;; returns depends on it: 0 "a"; 1 a length past the limit; 2 bytes past the end of memory;
;; 3 a name with a tab; 4 a trap; 5 nothing (no node active).
(module
  (memory (export "memory") 1)
  (func (export "actomaton_abi_version") (result i32) (i32.const 2))
  (func (export "actomaton_manifest") (result i32) (i32.const 512))
  (func (export "actomaton_alloc") (param $n i32) (result i32)
    (if (result i32) (i32.le_u (local.get $n) (i32.const 60000)) (then (i32.const 1024)) (else (i32.const 0))))
  (func (export "actomaton_snapshot") (result i64) (i64.const 0x0000000400000000))
  (func (export "actomaton_restore") (param $at i32) (param $n i32) (result i32)
    (if (result i32) (i32.eq (local.get $n) (i32.const 4))
      (then (i32.store (i32.const 0) (i32.load (local.get $at))) (i32.const 0))
      (else (i32.const 1))))
  ;; The description: "n=" and the state as one digit.
  (func (export "actomaton_describe") (result i64)
    (i32.store16 (i32.const 16) (i32.const 0x3d6e))
    (i32.store8 (i32.const 18) (i32.add (i32.const 48) (i32.load (i32.const 0))))
    (i64.const 0x0000000300000010))
  (func (export "actomaton_action_set") (param $value i32) (result i32)
    (i32.store (i32.const 0) (local.get $value)) (i32.const 0))
  ;; "a" at 32, "a\tb" at 40.
  (func (export "actomaton_active") (result i64)
    (local $state i32)
    (local.set $state (i32.load (i32.const 0)))
    (i32.store8 (i32.const 32) (i32.const 0x61))
    (i32.store8 (i32.const 40) (i32.const 0x61))
    (i32.store8 (i32.const 41) (i32.const 0x09))
    (i32.store8 (i32.const 42) (i32.const 0x62))
    (if (i32.eq (local.get $state) (i32.const 1)) (then (return (i64.const 0x0000404100000020))))
    (if (i32.eq (local.get $state) (i32.const 2)) (then (return (i64.const 0x0000000a0000fffc))))
    (if (i32.eq (local.get $state) (i32.const 3)) (then (return (i64.const 0x0000000300000028))))
    (if (i32.eq (local.get $state) (i32.const 4)) (then (unreachable)))
    (if (i32.eq (local.get $state) (i32.const 5)) (then (return (i64.const 0))))
    (i64.const 0x0000000100000020))
  (data (i32.const 256) "\61\63\74\69\76\65\31\2e\30\73\65\74\76\61\6c\75\65\64\69\67\72\61\70\68\20\7b\20\61\20\7d")
  (data (i32.const 288) "\0c\01\00\00\05\00\00\00\04\00\00\00")
  (data (i32.const 320) "\09\01\00\00\03\00\00\00\20\01\00\00\01\00\00\00")
  (data (i32.const 512) "\02\00\00\00\00\01\00\00\06\00\00\00\06\01\00\00\03\00\00\00\00\00\00\00\00\00\00\00\40\01\00\00\01\00\00\00\00\00\00\00\11\01\00\00\0d\00\00\00\01\00\00\00")
)
