;; A hostile plugin module for the host's tests (wasm/build.sh assembles it with wat2wasm).
;; Strings at 256, the action table at 320, the manifest at 512.
;; Actions: bump (the state +1); logs, which logs a 4,096-byte line in a loop that never ends;
;; fails, which calls `fail` with 4,096 bytes the same way; and log_once, one such line. Each
;; loop runs a handful of instructions per call: only the fuel the host's own work costs stops
;; it in time.
(module
  (import "actomaton" "log" (func $log (param i32 i32)))
  (import "actomaton" "fail" (func $fail (param i32 i32)))
  (memory (export "memory") 1)
  (func (export "actomaton_abi_version") (result i32) (i32.const 1))
  (func (export "actomaton_manifest") (result i32) (i32.const 512))
  (func (export "actomaton_alloc") (param $n i32) (result i32)
    (if (result i32) (i32.le_u (local.get $n) (i32.const 4096)) (then (i32.const 1024)) (else (i32.const 0))))
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
  (func (export "actomaton_action_logs") (result i32)
    (memory.fill (i32.const 8192) (i32.const 97) (i32.const 4096))
    (loop $again (call $log (i32.const 8192) (i32.const 4096)) (br $again))
    (i32.const 0))
  (func (export "actomaton_action_log_once") (result i32)
    (call $log (i32.const 8192) (i32.const 4096))
    (i32.const 0))
  (func (export "actomaton_action_fails") (result i32)
    (memory.fill (i32.const 8192) (i32.const 98) (i32.const 4096))
    (loop $again (call $fail (i32.const 8192) (i32.const 4096)) (br $again))
    (i32.const 0))
  (data (i32.const 256) "\68\6f\73\74\69\6c\65")
  (data (i32.const 263) "\31\2e\30\2e\30")
  (data (i32.const 268) "\62\75\6d\70")
  (data (i32.const 272) "\6c\6f\67\73")
  (data (i32.const 276) "\66\61\69\6c\73")
  (data (i32.const 281) "\6c\6f\67\5f\6f\6e\63\65")
  (data (i32.const 320) "\0c\01\00\00\04\00\00\00\00\00\00\00\00\00\00\00\10\01\00\00\04\00\00\00\00\00\00\00\00\00\00\00\14\01\00\00\05\00\00\00\00\00\00\00\00\00\00\00\19\01\00\00\08\00\00\00\00\00\00\00\00\00\00\00")
  (data (i32.const 512) "\01\00\00\00\00\01\00\00\07\00\00\00\07\01\00\00\05\00\00\00\00\00\00\00\00\00\00\00\40\01\00\00\04\00\00\00\00\00\00\00\00\00\00\00")
)
