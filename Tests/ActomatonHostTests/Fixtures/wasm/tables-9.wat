;; A hostile plugin module for the host's tests (wasm/build.sh assembles it with wat2wasm).
;; Generated once; the manifest's bytes are spelled out in the data segments:
;; strings at 256, the action table at 320, the manifest at 512.
;; Declares 9 tables of 100,000 elements: one table past the fixed limit.
(module
  (memory (export "memory") 1)
  (table 100000 funcref)
  (table 100000 funcref)
  (table 100000 funcref)
  (table 100000 funcref)
  (table 100000 funcref)
  (table 100000 funcref)
  (table 100000 funcref)
  (table 100000 funcref)
  (table 100000 funcref)
  (func (export "actomaton_abi_version") (result i32) (i32.const 1))
  (func (export "actomaton_manifest") (result i32) (i32.const 512))
  ;; One buffer at 1024 for whatever the host writes in.
  (func (export "actomaton_alloc") (param $n i32) (result i32)
    (if (result i32) (i32.le_u (local.get $n) (i32.const 60000)) (then (i32.const 1024)) (else (i32.const 0))))
  ;; The state is the i32 at offset 0; the snapshot is those 4 bytes.
  (func (export "actomaton_snapshot") (result i64) (i64.const 0x0000000400000000))
  (func (export "actomaton_restore") (param $at i32) (param $n i32) (result i32)
    (if (result i32) (i32.eq (local.get $n) (i32.const 4))
      (then (i32.store (i32.const 0) (i32.load (local.get $at))) (i32.const 0))
      (else (i32.const 1))))
  ;; The description: "n=" and the count as one digit (the tests keep it under 10).
  (func (export "actomaton_describe") (result i64)
    (i32.store16 (i32.const 16) (i32.const 0x3d6e))
    (i32.store8 (i32.const 18) (i32.add (i32.const 48) (i32.load (i32.const 0))))
    (i64.const 0x0000000300000010))
  (func (export "actomaton_action_bump") (result i32)
    (i32.store (i32.const 0) (i32.add (i32.load (i32.const 0)) (i32.const 1))) (i32.const 0))
  (data (i32.const 256) "\68\6f\73\74\69\6c\65")
  (data (i32.const 263) "\31\2e\30\2e\30")
  (data (i32.const 268) "\62\75\6d\70")
  (data (i32.const 320) "\0c\01\00\00\04\00\00\00\00\00\00\00\00\00\00\00")
  (data (i32.const 512) "\01\00\00\00\00\01\00\00\07\00\00\00\07\01\00\00\05\00\00\00\00\00\00\00\00\00\00\00\40\01\00\00\01\00\00\00\00\00\00\00")
)
