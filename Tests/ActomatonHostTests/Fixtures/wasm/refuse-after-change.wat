;; A hostile plugin module for the host's tests (wasm/build.sh assembles it with wat2wasm), from an audit.
;; Actions: bump (+1); refuse_after_change (+100, then returns ACTOMATON_ERROR: the contract
;; forbids the change); invalid_after_change (+1000, then a next action at an offset outside
;; memory: the host refuses the request, so the action fails with its change made); crash (a trap).
;; The description is "n=" and the count in decimal.
(module

 (import "actomaton" "next_action" (func $next (param i32) (result i32)))
 (import "actomaton" "delayed_action" (func $delayed (param i32 i64 i32) (result i32)))
 (import "actomaton" "repeating_action" (func $repeating (param i32 i64 i32) (result i32)))
 (import "actomaton" "cancel" (func $cancel (param i32 i32) (result i32)))
 (import "actomaton" "fail" (func $fail (param i32 i32)))
 (import "actomaton" "log" (func $log (param i32 i32)))

(memory (export "memory") 2)
(func (export "actomaton_abi_version") (result i32) (i32.const 2))
(func (export "actomaton_manifest") (result i32) (i32.const 65656))
(func (export "actomaton_alloc") (param $n i32) (result i32) (if (result i32) (i32.le_u (local.get $n) (i32.const 60000)) (then (i32.const 1024)) (else (i32.const 0))))
(func (export "actomaton_snapshot") (result i64) (i64.const 0x0000000400000000))
(func (export "actomaton_restore") (param $at i32) (param $n i32) (result i32)
    (if (result i32) (i32.eq (local.get $n) (i32.const 4))
      (then (i32.store (i32.const 0) (i32.load (local.get $at))) (i32.const 0))
      (else (i32.const 1))))
(func (export "actomaton_describe") (result i64)
    (local $v i32) (local $p i32)
    (local.set $v (i32.load (i32.const 0)))
    (local.set $p (i32.const 64))
    (loop $l
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p) (i32.add (i32.const 48) (i32.rem_u (local.get $v) (i32.const 10))))
      (local.set $v (i32.div_u (local.get $v) (i32.const 10)))
      (br_if $l (local.get $v)))
    (local.set $p (i32.sub (local.get $p) (i32.const 2)))
    (i32.store16 (local.get $p) (i32.const 0x3d6e))
    (i64.or (i64.extend_i32_u (local.get $p)) (i64.shl (i64.extend_i32_u (i32.sub (i32.const 64) (local.get $p))) (i64.const 32))))
(func (export "actomaton_action_bump")  (result i32) (i32.store (i32.const 0) (i32.add (i32.load (i32.const 0)) (i32.const 1))) (i32.const 0))
(func (export "actomaton_action_refuse_after_change")  (result i32) (i32.store (i32.const 0) (i32.add (i32.load (i32.const 0)) (i32.const 100))) (i32.const 1))
(func (export "actomaton_action_invalid_after_change")  (result i32) (i32.store (i32.const 0) (i32.add (i32.load (i32.const 0)) (i32.const 1000))) (drop (call $next (i32.const -4))) (i32.const 0))
(func (export "actomaton_action_crash")  (result i32) unreachable)

(data (i32.const 65536) "\62\75\6d\70")
(data (i32.const 65540) "\72\65\66\75\73\65\5f\61\66\74\65\72\5f\63\68\61\6e\67\65")
(data (i32.const 65559) "\69\6e\76\61\6c\69\64\5f\61\66\74\65\72\5f\63\68\61\6e\67\65")
(data (i32.const 65579) "\63\72\61\73\68")
(data (i32.const 65584) "\00\00\01\00\04\00\00\00\00\00\00\00\00\00\00\00\04\00\01\00\13\00\00\00\00\00\00\00\00\00\00\00\17\00\01\00\14\00\00\00\00\00\00\00\00\00\00\00\2b\00\01\00\05\00\00\00\00\00\00\00\00\00\00\00")
(data (i32.const 65648) "\6d\75\74")
(data (i32.const 65651) "\31\2e\30\2e\30")
(data (i32.const 65656) "\02\00\00\00\70\00\01\00\03\00\00\00\73\00\01\00\05\00\00\00\00\00\00\00\00\00\00\00\30\00\01\00\04\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00")
)
